"""Where a function's result comes from: walk back from each output to the operation that made it.

The walk goes through `jit` bodies and through layout-only operations (reshapes, converts, copies),
which leave the bytes where they are, and stops at the first operation that computes. A grader
asks whether the result is a `pallas_call`'s output, whether that output is aliased from an input
(and what that input was made from), or which later operation rewrote it, with the learner's line:
`jnp.where` or `jnp.nan_to_num` after a kernel is a second full pass over memory.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax.extend as jex

from course.grading.observe.kernels.kernels import KernelCall, kernel_call_of
from course.grading.observe.traces.jaxprs import learner_line, traced

__all__ = ["LAYOUT_OPS", "OutputOrigin", "output_origins"]

# Operations that keep every value where it is (or only change its dtype): the walk passes them.
LAYOUT_OPS = frozenset({
    "reshape", "squeeze", "expand_dims", "convert_element_type", "copy", "copy_p", "device_put",
    "sharding_constraint", "optimization_barrier",
})
# Operations whose i-th output is their i-th operand (the others take their first operand).
_PER_OPERAND = frozenset({"device_put", "optimization_barrier"})


@dataclass(frozen=True)
class OutputOrigin:
    """What made one output of a traced function, seen through `jit` and layout-only operations.

    `kind` is "kernel" (a `pallas_call` output), "op" (another operation computed it), "argument"
    (an input passed straight through) or "constant".
    """

    kind: str
    kernel: KernelCall | None = None
    output_index: int | None = None
    aliased_input: int | None = None
    """The `pallas_call` operand (scalar-prefetch operands included) aliased onto this output."""
    aliased_from: str | None = None
    """What that operand is: "argument N", "constant", or the primitive that made it."""
    op: str | None = None
    """For kind "op": the primitive that computed the output, e.g. `select_n`."""
    within: tuple[str, ...] = ()
    """The names of the `jit`s around that primitive, outermost first, e.g. ("f", "nan_to_num", "_where")."""
    called_as: str | None = None
    """The outermost of those `jit`s that the learner's code called, e.g. "nan_to_num"."""
    line: int | None = None
    """The learner's line of that primitive (or of the call that contains it)."""
    argument: int | None = None
    """For kind "argument": which flattened argument of the function is returned."""
    operands: tuple[str, ...] = ()
    """For kind "kernel": what made each operand of the `pallas_call`, as `aliased_from` says it."""

    def describe(self) -> str:
        """A phrase for a message: '`select_n` (in `nan_to_num`) at line 31'."""
        if self.kind == "kernel":
            return f"output {self.output_index} of the `pallas_call` of `{self.kernel.kernel_name}`"
        if self.kind == "argument":
            return f"argument {self.argument} of the function, returned as it is"
        if self.kind == "constant":
            return "a constant"
        where = f" (in `{self.called_as.lstrip('_')}`)" if self.called_as else ""
        at = f" at line {self.line}" if self.line is not None else ""
        return f"`{self.op}`{where}{at}"


def output_origins(fn: Callable[..., Any], *args: Any, path: Path | None = None) -> list[OutputOrigin]:
    """Trace `fn(*args)` and say, for each flattened output, what made it."""
    closed = traced(fn, *args)
    top = _Frame(closed.jaxpr, None, None)
    return [_origin(top, var, path) for var in closed.jaxpr.outvars]


@dataclass
class _Frame:
    """One jaxpr on the walk, with the call equation of its parent that runs it."""

    jaxpr: Any
    call: Any
    parent: _Frame | None

    def __post_init__(self) -> None:
        """Index the producer of every variable once."""
        self.made_by = {v: (eqn, i) for eqn in self.jaxpr.eqns for i, v in enumerate(eqn.outvars)}


def _origin(frame: _Frame, var: Any, path: Path | None) -> OutputOrigin:
    """Walk one output back to the operation that made it."""
    kind, frame, eqn, index = _source(frame, var)
    if kind == "kernel":
        return _kernel_origin(frame, eqn, index, path)
    if kind == "op":
        return OutputOrigin("op", op=eqn.primitive.name, within=_jit_names(frame),
                            called_as=_called_as(frame, path), line=_line(frame, eqn, path))
    return OutputOrigin(kind, argument=index if kind == "argument" else None)


def _kernel_origin(frame: _Frame, eqn: Any, index: int, path: Path | None) -> OutputOrigin:
    """A `pallas_call` output, with the operand aliased onto it and what made that operand."""
    aliases = {o: i for i, o in (eqn.params.get("input_output_aliases") or ())}
    operand = aliases.get(index)
    operands = tuple(_made_by(frame, var) for var in eqn.invars)
    return OutputOrigin("kernel", kernel=kernel_call_of(eqn, path), output_index=index,
                        aliased_input=operand, aliased_from=None if operand is None else operands[operand],
                        operands=operands)


def _made_by(frame: _Frame, var: Any) -> str:
    """What made one operand: "argument N", "constant", or the primitive that computed it."""
    kind, _, src, arg = _source(frame, var)
    if kind == "argument":
        return f"argument {arg}"
    if kind == "constant":
        return "constant"
    return src.primitive.name if src is not None else kind


def _source(frame: _Frame, var: Any) -> tuple[str, _Frame, Any, int | None]:
    """(kind, frame, equation, index) of what made `var`, seen through calls and layout operations."""
    while True:
        if isinstance(var, jex.core.Literal) or var in frame.jaxpr.constvars:
            return "constant", frame, None, None
        if var in frame.jaxpr.invars:
            index = frame.jaxpr.invars.index(var)
            if frame.parent is None:
                return "argument", frame, None, index
            var, frame = frame.call.invars[index], frame.parent
            continue
        if var not in frame.made_by:
            return "constant", frame, None, None
        eqn, index = frame.made_by[var]
        name = eqn.primitive.name
        if name == "pallas_call":
            return "kernel", frame, eqn, index
        body = _body(eqn)
        if body is not None:
            frame = _Frame(body, eqn, frame)
            var = body.outvars[index]
        elif name in LAYOUT_OPS:
            var = eqn.invars[index if name in _PER_OPERAND else 0]
        else:
            return "op", frame, eqn, index


def _body(eqn: Any) -> Any:
    """The jaxpr a call-like equation (`jit`, `closed_call`, `remat`...) runs on its operands, if any."""
    if eqn.primitive.name in ("pallas_call", "cond", "while", "scan"):
        return None
    for sub in jex.core.jaxprs_in_params(eqn.params):
        inner = getattr(sub, "jaxpr", sub)
        if len(inner.invars) == len(eqn.invars) and len(inner.outvars) == len(eqn.outvars):
            return inner
    return None


def _jit_names(frame: _Frame) -> tuple[str, ...]:
    """The names of the `jit`s enclosing `frame`, outermost first."""
    names = []
    while frame.call is not None:
        names.append(str(frame.call.params.get("name", frame.call.primitive.name)))
        frame = frame.parent
    return tuple(reversed(names))


def _called_as(frame: _Frame, path: Path | None) -> str | None:
    """The name of the outermost enclosing `jit` whose function is not the learner's (a library one)."""
    calls = []
    while frame.call is not None:
        calls.append(frame)
        frame = frame.parent
    for f in reversed(calls):  # outermost first
        debug = getattr(f.jaxpr, "debug_info", None)
        src = str(getattr(debug, "func_src_info", "") or "")
        theirs = str(path) in src if path is not None else "/jax/" not in src
        if not theirs:
            return str(f.call.params.get("name", "")) or None
    return None


def _line(frame: _Frame, eqn: Any, path: Path | None) -> int | None:
    """The learner's line of `eqn`, else of the innermost enclosing call that has one."""
    line = learner_line(eqn, path)
    while line is None and frame.call is not None:
        line, frame = learner_line(frame.call, path), frame.parent
    return line
