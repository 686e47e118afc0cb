"""Buffer donation: consumed inputs, the jitted functions of a submission, real aliasing, warnings.

On the CPU, a donated input that XLA reuses is deleted as soon as the call is dispatched, so
`x.is_deleted()` tells whether the caller's array was consumed. A request to donate is not
proof of reuse (an f32 input and an f16 output cannot share), so the real test of aliasing is
`compiled.memory_analysis().alias_size_in_bytes`.
"""

from __future__ import annotations

import contextlib
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax

from course.grading.feedback import fail
from course.grading.observe.calls.ownership import eqn_is_jax_helper
from course.grading.observe.calls.rebuilt import NOT_USABLE_WARNING, program_facts

__all__ = [
    "DonationInfo",
    "Copy",
    "JitCall",
    "Source",
    "WarningsCall",
    "alias_bytes",
    "argument_copies",
    "assert_consumed",
    "assert_not_consumed",
    "call_recording_warnings",
    "donation_info",
    "is_consumed",
    "is_deleted_error",
    "jit_calls",
    "jitted_functions",
]


def is_consumed(x: Any) -> bool:
    """True when `x` is a jax.Array whose buffer is gone (donated or deleted)."""
    return isinstance(x, jax.Array) and not isinstance(x, jax.core.Tracer) and x.is_deleted()


def assert_consumed(x: Any, name: str, hint: str | None = None) -> None:
    """Fail unless the call consumed `x` (its buffer was donated and reused)."""
    if not is_consumed(x):
        fail(hint or (f"`{name}` is still alive after the call: its buffer was not donated. "
                      "Did you copy it, or donate the wrong argument?"))


def assert_not_consumed(x: Any, name: str, hint: str | None = None) -> None:
    """Fail if the call consumed `x`, which the caller still needs."""
    if is_consumed(x):
        fail(hint or (f"`{name}` was consumed by the call: its buffer was donated, so the caller "
                      "can no longer read it. Donate only the arguments the caller gives up."))


def is_deleted_error(exc: BaseException) -> bool:
    """True when `exc` is JAX refusing to read or pass an array whose buffer was donated."""
    text = str(exc)
    if isinstance(exc, RuntimeError) and "has been deleted" in text:
        return True  # reading a donated array: "Array has been deleted with shape=..."
    # Passing it to a jitted call again: a plain ValueError "Buffer has been deleted or donated".
    return isinstance(exc, ValueError | RuntimeError) and "deleted or donated" in text


def jitted_functions(module: types.ModuleType) -> dict[str, Any]:
    """The module-level objects made by `jax.jit`, by their names in the module, in order.

    Covers `f = jax.jit(g, ...)`, `@jax.jit` and `@functools.partial(jax.jit, ...)` alike,
    since all of them leave a jitted wrapper in the module's namespace.
    """
    found: dict[str, Any] = {}
    for name, value in vars(module).items():
        if name.startswith("__"):
            continue
        if isinstance(value, jax.stages.Wrapped) and callable(getattr(value, "lower", None)):
            found[name] = value
    return found


def alias_bytes(jitted: Any, *args: Any, **kwargs: Any) -> int:
    """Bytes of input buffers that the compiled `jitted(*args)` reuses for its outputs.

    Arguments may be arrays (they are not consumed) or `jax.ShapeDtypeStruct`s.
    """
    compiled = jitted.lower(*args, **kwargs).compile()
    analysis = compiled.memory_analysis()
    return int(getattr(analysis, "alias_size_in_bytes", 0) or 0)


@dataclass(frozen=True)
class DonationInfo:
    """What a jitted function asks for and what its compiled form does, for one input signature."""

    donate_argnums: tuple[int, ...]
    alias_bytes: int
    out_info: Any
    """The outputs' shapes and dtypes, as `jax.ShapeDtypeStruct` leaves."""


def donation_info(jitted: Any, *args: Any, **kwargs: Any) -> DonationInfo:
    """Lower and compile `jitted` for `args`: its requested donations and its real aliasing."""
    lowered = jitted.lower(*args, **kwargs)
    analysis = lowered.compile().memory_analysis()
    return DonationInfo(
        donate_argnums=tuple(lowered.donate_argnums),
        alias_bytes=int(getattr(analysis, "alias_size_in_bytes", 0) or 0),
        out_info=lowered.out_info,
    )


@dataclass(frozen=True)
class WarningsCall:
    """The result of a call and the warnings it raised."""

    result: Any
    warnings: list[warnings.WarningMessage]

    @property
    def not_usable(self) -> list[str]:
        """The texts of JAX's "Some donated buffers were not usable" warnings, first line each."""
        texts = (str(w.message) for w in self.warnings)
        return [t.splitlines()[0] for t in texts if NOT_USABLE_WARNING in t]


def call_recording_warnings(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> WarningsCall:
    """Call `fn`, recording every warning it raises (JAX warns about donation only on a first compile)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn(*args, **kwargs)
    return WarningsCall(result=result, warnings=list(caught))


@dataclass(frozen=True)
class Source:
    """Where a value passed to a jitted call comes from, relative to the traced function's arguments."""

    arg: int | None
    """The argument it is, or was computed from; None when it depends on no single argument."""
    via: str | None = None
    """None when it is that argument itself; else the primitive that made it from the argument."""
    line: int | None = None
    """The learner's line of that primitive, when known."""


@dataclass(frozen=True)
class JitCall:
    """One call of a jitted function made by a traced function, and what its donation really does."""

    name: str
    """The jitted function's name, as JAX reports it in compile events (`jit(name)`)."""
    donated: tuple[bool, ...]
    """Per input: whether the call donates it."""
    sources: tuple[Source, ...]
    """Per input: where it comes from."""
    alias_bytes: int
    """Bytes of donated inputs the compiled call reuses for its outputs."""
    not_usable: tuple[str, ...]
    """JAX's "Some donated buffers were not usable" warnings when compiling the call."""
    out_info: Any
    """The outputs' shapes and dtypes."""
    line: int | None
    """The learner's line that made the call, when known."""
    defined_line: int | None = None
    """The learner's line where the called function was written (a lambda's own line), when known."""
    reused: tuple[int, ...] = ()
    """The inputs whose buffers the compiled program writes an output into."""
    lowered: str = ""
    """The signature line of the lowered program's `@main`: which inputs it marks as reusable."""
    compiled: str = ""
    """The compiled HLO module's first line: what XLA aliases, and the parameters' types."""
    kept: tuple[int, ...] | None = None
    """The inputs the program has as parameters (JAX leaves out those it never reads); None: all."""
    program: str = ""
    """The whole lowered program, as text: two calls run the same program only when these are equal."""

    @property
    def where(self) -> int | None:
        """The line a message points at: a lambda's own line (its name says nothing), else the call's."""
        if self.name == "<lambda>" and self.defined_line:
            return self.defined_line
        return self.line

    def donated_copies(self, arg: int) -> list[Source]:
        """Donated inputs that were computed from argument `arg` rather than being it."""
        return [s for d, s in zip(self.donated, self.sources, strict=True) if d and s.arg == arg and s.via]


def jit_calls(fn: Callable[..., Any], *args: Any, path: Any = None) -> list[JitCall]:
    """Trace `fn(*args)` and describe each jitted call it makes from Python, wherever the jit is held.

    Only calls made at the top of the trace count: a donation requested by a jit nested inside
    another is ignored by XLA. Calls of JAX's own jitted functions (`jnp.where` runs a jitted
    `_where`) are the learner's operations, not their jits, and are left out. Each call's program
    is compiled again, on its own, to read its real aliasing and any "not usable" warning.
    Arguments may be `jax.ShapeDtypeStruct`s. In the judge, `fn` is the learner's function seen from
    afar: the executor traces it and sends each call's program texts, which `judged` reads here.
    """
    from course.grading.observe.traces.jaxprs import called_function_line, learner_line, sendable

    remote = getattr(fn, "jit_calls", None)
    if remote is not None:  # the learner's function seen from the judge: traced there, judged here
        return judged(remote(*(sendable(a) for a in args)))
    # A Python number stays one, as in a real call: a jit that keeps it static needs it hashable.
    static = tuple(i for i, a in enumerate(args) if isinstance(a, (bool, int, float)))
    closed = jax.make_jaxpr(_afresh(fn), static_argnums=static)(*args)
    origin: dict[Any, Source] = {v: Source(i) for i, v in enumerate(closed.jaxpr.invars)}
    calls = []
    with _on_mesh_of(args):
        for eqn in closed.jaxpr.eqns:
            if eqn.primitive.name in ("jit", "pjit") and not eqn_is_jax_helper(eqn):
                sources = tuple(_origin(v, origin) for v in eqn.invars)
                calls.append(_describe_call(eqn, sources, learner_line(eqn, path), called_function_line(eqn, path)))
            _note_outputs(eqn, origin, learner_line(eqn, path))
    return calls


def _afresh(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` behind a new function object: JAX keeps the trace of a function it has traced at these types, so
    without this a second trace would show the program of the first, not what the learner's Python would
    build now (a call counter that makes every call's program new, say)."""
    def traced(*args: Any) -> Any:
        return fn(*args)

    return traced


def _on_mesh_of(args: Any) -> Any:
    """The arguments' own mesh as the current one, so that a call traced on it lowers on its devices (a
    traced operand knows only the mesh's shape); no mesh when no argument is sharded on one."""
    for leaf in jax.tree_util.tree_leaves(args):
        mesh = getattr(getattr(leaf, "sharding", None), "mesh", None)
        if isinstance(mesh, jax.sharding.Mesh):
            return jax.set_mesh(mesh)
    return contextlib.nullcontext()


def record_of(call: JitCall) -> dict[str, Any]:
    """What the executor sends of one jitted call: what its trace says, and its two program texts."""
    return {"name": call.name, "line": call.line, "defined_line": call.defined_line, "donated": list(call.donated),
            "sources": [[s.arg, s.via, s.line] for s in call.sources],
            "lowered": call.lowered, "compiled": call.compiled,
            "kept": None if call.kept is None else list(call.kept), "program": call.program}


def judged(records: Any) -> list[JitCall]:
    """The jitted calls the executor traced, what each really reuses read here from its program texts
    (`course.grading.judge.donors`)."""
    from course.grading.judge.donors import program_buffers

    if not isinstance(records, list) or not all(_is_record(r) for r in records):
        fail("the description of your jitted calls came back malformed, which no call of `jax.jit` makes.")
    calls = []
    for r in records:
        donated = tuple(r["donated"])
        buffers = program_buffers(r["lowered"], r["compiled"], donated, r.get("kept"))
        calls.append(JitCall(
            name=r["name"], donated=donated, sources=tuple(Source(*s) for s in r["sources"]),
            alias_bytes=buffers.alias_bytes, not_usable=buffers.not_usable(donated),
            out_info=tuple(_spec(shape, dtype) for shape, dtype in buffers.result_types()),
            line=r["line"], defined_line=r["defined_line"], reused=tuple(sorted(buffers.aliased)),
            lowered=r["lowered"], compiled=r["compiled"], kept=buffers.kept, program=r.get("program", "")))
    return calls


def _is_record(r: Any) -> bool:
    """Whether `r` has the fields and types `record_of` gives."""
    def line(v: Any) -> bool:
        return v is None or type(v) is int

    return (isinstance(r, dict) and isinstance(r.get("name"), str) and line(r.get("line"))
            and line(r.get("defined_line")) and isinstance(r.get("lowered"), str) and isinstance(r.get("compiled"), str)
            and isinstance(r.get("donated"), list) and all(type(d) is bool for d in r["donated"])
            and isinstance(r.get("sources"), list) and len(r["sources"]) == len(r["donated"])
            and (r.get("kept") is None or isinstance(r["kept"], list) and all(type(k) is int for k in r["kept"]))
            and isinstance(r.get("program", ""), str)
            and all(isinstance(s, list) and len(s) == 3 and line(s[0]) and (s[1] is None or isinstance(s[1], str))
                    and line(s[2]) for s in r["sources"]))


def _spec(shape: tuple[int, ...], dtype: Any) -> Any:
    """A `jax.ShapeDtypeStruct`, as `Lowered.out_info` gives one."""
    return jax.ShapeDtypeStruct(shape, dtype)


def _origin(var: Any, origin: dict[Any, Source]) -> Source:
    """Where `var` comes from; literals and unrelated values come from no argument."""
    return origin.get(var, Source(None)) if not isinstance(var, jax.extend.core.Literal) else Source(None)


def _note_outputs(eqn: Any, origin: dict[Any, Source], line: int | None) -> None:
    """An op on one argument's value (a copy, an add of a constant) makes values derived from it."""
    found = {_origin(v, origin).arg for v in eqn.invars if not isinstance(v, jax.extend.core.Literal)}
    if len(found) == 1 and None not in found:
        (arg,) = found
        for out in eqn.outvars:
            origin[out] = Source(arg, eqn.primitive.name, line)


def _describe_call(eqn: Any, sources: tuple[Source, ...], line: int | None, defined_line: int | None) -> JitCall:
    """Compile the called program alone, with its donation, and read what it does."""
    facts = program_facts(eqn)
    return JitCall(name=str(eqn.params.get("name", "")), sources=sources, line=line, defined_line=defined_line,
                   **facts)


@dataclass(frozen=True)
class Copy:
    """A full copy of an argument made by a traced function: a second buffer holding its values."""

    arg: int
    via: str
    """How: `copy` (`jnp.array(x)`, `x.copy()`), `device_put` (a forced copy), or `returned by name`."""
    line: int | None


def argument_copies(fn: Callable[..., Any], *args: Any, path: Any = None) -> list[Copy]:
    """Trace `fn(*args)` and list each full copy it makes of one of its arguments, in program order.

    A copy kept aside (a backup in a global) is as much a second buffer as one passed on, and so
    is an argument a jitted call returns unchanged: XLA must copy it to return it, all the more
    when the call donates it. Arguments may be `jax.ShapeDtypeStruct`s.
    """
    from course.grading.observe.traces.jaxprs import learner_line, traced

    closed = traced(fn, *args)
    position = {v: i for i, v in enumerate(closed.jaxpr.invars)}
    found = []
    for eqn in closed.jaxpr.eqns:
        for operand, via in _copied_operands(eqn):
            var = eqn.invars[operand]
            if not isinstance(var, jax.extend.core.Literal) and var in position:
                found.append(Copy(position[var], via, learner_line(eqn, path)))
    return found


def _copied_operands(eqn: Any) -> list[tuple[int, str]]:
    """(operand, how) for each operand that `eqn` returns a full copy of."""
    name = eqn.primitive.name
    if name in ("copy", "copy_p"):
        return [(0, "copy")]
    if name == "device_put":
        return [(i, "device_put") for i, s in enumerate(eqn.params.get("copy_semantics", ())) if "COPY" in str(s)]
    if name not in ("jit", "pjit") or eqn_is_jax_helper(eqn):
        return []
    inner = eqn.params["jaxpr"].jaxpr
    position = {v: i for i, v in enumerate(inner.invars)}
    copied = {e.outvars[0]: e.invars[0] for e in inner.eqns if e.primitive.name in ("copy", "copy_p")}
    returned = []
    for out in inner.outvars:
        source = copied.get(out, out) if not isinstance(out, jax.extend.core.Literal) else None
        if source is not None and not isinstance(source, jax.extend.core.Literal) and source in position:
            returned.append((position[source], f"returned by `{eqn.params.get('name', 'jit')}`"))
    return returned
