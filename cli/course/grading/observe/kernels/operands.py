"""Whether a kernel does the work: its operands are the function's inputs as given, its output the result.

`course.grading.observe.traces.dataflow` walks back from a result through layout operations, converts
included, to find a kernel whose output is later masked or rewritten. A compute kernel asks for
more: nothing may change the data on its way in or out. `kernel_flow(fn, *args)` traces `fn`
and, for its one `pallas_call`, says where each operand comes from and what makes each result,
seen through `jit` bodies and the operations that only rename memory (reshapes, copies), but
**not** through a dtype conversion: `x.astype(jnp.float32)` before a kernel is a pass over x in
HBM, and `out.astype(x.dtype)` after it a second pass over the result. `work_outside` lists
the compute primitives (`dot_general`, `exp`, ...) that run outside any kernel, with lines.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax.extend as jex

from course.grading.observe.kernels.kernels import KernelCall, kernel_call_of
from course.grading.observe.traces.jaxprs import learner_line, traced

__all__ = ["Flow", "KernelFlow", "kernel_flow", "work_outside"]

# Operations that leave every byte where it is: the walk passes through them.
RENAMING = frozenset({"reshape", "squeeze", "expand_dims", "copy", "copy_p", "device_put", "sharding_constraint",
                      "optimization_barrier"})


@dataclass(frozen=True)
class Flow:
    """Where a value comes from: "argument" N, a "kernel" output, an "op" (with its line) or a "constant"."""

    kind: str
    index: int | None = None  # the argument's or the kernel output's position
    op: str | None = None
    line: int | None = None

    def describe(self) -> str:
        """'argument 0', 'output 0 of the kernel', '`convert_element_type` at line 29'."""
        if self.kind == "argument":
            return f"argument {self.index}"
        if self.kind == "kernel":
            return f"output {self.index} of the kernel"
        if self.kind == "constant":
            return "a constant"
        return f"`{self.op}`" + (f" at line {self.line}" if self.line else "")


@dataclass(frozen=True)
class KernelFlow:
    """The `pallas_call`s of a traced function, where their operands come from, what makes the results."""

    calls: tuple[KernelCall, ...]
    operands: tuple[tuple[Flow, ...], ...]  # per call, per operand
    results: tuple[Flow, ...]  # per flattened output of the function


@dataclass
class _Frame:
    """A jaxpr on the walk and the equation of its parent that runs it."""

    jaxpr: Any
    call: Any
    parent: _Frame | None

    def __post_init__(self) -> None:
        """Index each variable's producer once."""
        self.made_by = {v: (eqn, i) for eqn in self.jaxpr.eqns for i, v in enumerate(eqn.outvars)}


def _body(eqn: Any) -> Any:
    """The jaxpr a call-like equation (`jit`, `custom_jvp_call`, ...) runs on exactly its operands."""
    if eqn.primitive.name in ("pallas_call", "cond", "while", "scan", "run_scoped"):
        return None
    for sub in jex.core.jaxprs_in_params(eqn.params):
        inner = getattr(sub, "jaxpr", sub)
        if len(inner.invars) == len(eqn.invars) and len(inner.outvars) == len(eqn.outvars):
            return inner
    return None


def _back(frame: _Frame, var: Any, path: Path | None) -> Flow:
    """Walk a variable back to what made it, through calls and renaming operations only."""
    while True:
        if isinstance(var, jex.core.Literal) or var in frame.jaxpr.constvars:
            return Flow("constant")
        if var in frame.jaxpr.invars:
            index = frame.jaxpr.invars.index(var)
            if frame.parent is None:
                return Flow("argument", index)
            var, frame = frame.call.invars[index], frame.parent
            continue
        if var not in frame.made_by:
            return Flow("constant")
        eqn, index = frame.made_by[var]
        if eqn.primitive.name == "pallas_call":
            return Flow("kernel", index)
        body = _body(eqn)
        if body is not None:
            frame, var = _Frame(body, eqn, frame), body.outvars[index]
        elif eqn.primitive.name in RENAMING:
            var = eqn.invars[index if eqn.primitive.name in ("device_put", "optimization_barrier") else 0]
        else:
            return Flow("op", op=eqn.primitive.name, line=_line(frame, eqn, path))


def _line(frame: _Frame, eqn: Any, path: Path | None) -> int | None:
    """The learner's line of `eqn`, else that of the innermost enclosing call that has one."""
    line = learner_line(eqn, path)
    while line is None and frame.call is not None:
        line, frame = learner_line(frame.call, path), frame.parent
    return line


def _kernels(frame: _Frame) -> list[tuple[_Frame, Any]]:
    """Every `pallas_call` reachable through call-like equations, with the frame it sits in."""
    found = []
    for eqn in frame.jaxpr.eqns:
        if eqn.primitive.name == "pallas_call":
            found.append((frame, eqn))
            continue
        for sub in jex.core.jaxprs_in_params(eqn.params):
            found.extend(_kernels(_Frame(getattr(sub, "jaxpr", sub), eqn, frame)))
    return found


def kernel_flow(fn: Callable[..., Any], *args: Any, path: Path | None = None) -> KernelFlow:
    """Trace `fn(*args)`: its kernels, where their operands come from, what makes each result."""
    closed = traced(fn, *args)
    top = _Frame(closed.jaxpr, None, None)
    found = _kernels(top)
    calls = tuple(kernel_call_of(eqn, path) for _, eqn in found)
    operands = tuple(tuple(_back(frame, v, path) for v in eqn.invars) for frame, eqn in found)
    results = tuple(_back(top, v, path) for v in closed.jaxpr.outvars)
    return KernelFlow(calls=calls, operands=operands, results=results)


def work_outside(fn: Callable[..., Any], *args: Any, prims: frozenset[str],
                 path: Path | None = None) -> list[tuple[str, int | None]]:
    """The primitives among `prims` that `fn(*args)` runs outside every kernel, with the learner's lines."""
    closed = traced(fn, *args)
    found: list[tuple[str, int | None]] = []

    def visit(jaxpr: Any, parent_line: int | None) -> None:
        """Collect the wanted primitives of `jaxpr` and of what it nests, kernels excepted."""
        for eqn in jaxpr.eqns:
            if eqn.primitive.name == "pallas_call":
                continue
            line = learner_line(eqn, path) or parent_line
            if eqn.primitive.name in prims:
                found.append((eqn.primitive.name, line))
            for sub in jex.core.jaxprs_in_params(eqn.params):
                visit(getattr(sub, "jaxpr", sub), line)

    visit(closed.jaxpr, None)
    return found
