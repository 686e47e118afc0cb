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
    "ran_jit_calls",
    "runs_as_jit_calls",
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
    """Call `fn(*args)` and describe each jitted program the call ran, wherever the jit is held.

    Only programs run at the top count: a donation requested by a jit nested inside another is
    ignored by XLA. JAX's own jitted functions (`jnp.where` runs a jitted `_where`) and eager
    operations are the learner's operations, not their jits, and are left out. Each program is
    compiled again, on its own, to read its real aliasing and any "not usable" warning. The facts
    are those of the very call (`ran_jit_calls`), never of a trace made beside it. Arguments may be
    `jax.ShapeDtypeStruct`s. In the judge, `fn` is the learner's function seen from afar: the
    executor makes the call and sends each program's texts, which `judged` reads here.
    """
    from course.grading.observe.traces.jaxprs import sendable

    remote = getattr(fn, "jit_calls", None)
    if remote is not None:  # the learner's function seen from the judge: called there, judged here
        return judged(remote(*(sendable(a) for a in args)))
    return ran_jit_calls(fn, *args, path=path)


def ran_jit_calls(fn: Callable[..., Any], *args: Any, path: Any = None) -> list[JitCall]:
    """Call `fn(*args)` for real and describe each jitted program the call ran, as `jit_calls` describes the
    jitted calls of a trace: the facts of the very call, never of a trace made beside it. Arguments given as
    `jax.ShapeDtypeStruct`s are made into random arrays of those types first (their values are never read); given
    arrays are copied first, so that what the call donates is never the caller's."""
    from course.grading.observe.calls.executions import record_runs

    concrete = jax.tree_util.tree_map(_materialized, args)
    with record_runs(programs=True) as rec:
        out = fn(*concrete)
        leaves = jax.tree_util.tree_leaves(out)
        jax.block_until_ready([x for x in leaves if not (isinstance(x, jax.Array) and x.is_deleted())])
    if any(r.program is None and not r.helper for r in rec.runs):
        # Said as JAX says it when such a program meets a trace, which the graders already explain.
        raise AheadOfTimeCall("the call ran a program lowered and compiled for a particular signature "
                              "(`.lower(...).compile()`), whose donations cannot be read from it")
    return runs_as_jit_calls(rec.runs, jax.tree_util.tree_leaves(concrete), path)


class AheadOfTimeCall(RuntimeError):
    """A call of the learner's ran an ahead-of-time compiled program: `jit_calls` cannot read its donations."""


def runs_as_jit_calls(runs: Any, inputs: list[Any], path: Any = None) -> list[JitCall]:
    """The learner's jitted calls among the programs a call ran (`RunRecorder(programs=True).runs`), each with
    where its arguments came from: one of `inputs` itself, or made from one by an operation the call ran
    before it (a copy). JAX's own operations are followed, not listed; a compiled AOT call has no program."""
    origin: dict[int, Source] = {id(a): Source(i) for i, a in enumerate(inputs)}
    calls = []
    with _on_mesh_of(inputs):  # a program of sharded operands compiles again on their mesh
        for run in runs:
            _follow(run, origin, calls, path)
    return calls


def _follow(run: Any, origin: dict[int, Source], calls: list[JitCall], path: Any) -> None:
    """Note where one run's outputs come from, and list it among `calls` when it is a jit of the learner's."""
    sources = tuple(origin.get(id(a), Source(None)) for a in run.args)
    line = _line_in(run.frames, path)
    name = str(run.params.get("name", "")) or run.fun_name
    found = {s.arg for s in sources}
    if len(found) == 1 and None not in found:  # what one argument's value became, and how (the runs hold
        (arg,) = found                          # every array alive: no id is reused meanwhile)
        for made in run.outs:
            origin.setdefault(id(made), Source(arg, name, line))
    if run.helper or run.program is None:
        return
    calls.append(JitCall(name=name, sources=sources, line=line, defined_line=_defined_line(run.program, path),
                         **program_facts(_as_equation(run))))


def _materialized(leaf: Any) -> Any:
    """A random array for a type to call with (placed as its sharding says), a copy of an array, anything else as
    it is."""
    import numpy as np

    if isinstance(leaf, jax.Array):
        return leaf.copy()
    if not isinstance(leaf, jax.ShapeDtypeStruct):
        return leaf
    rng = np.random.default_rng(len(leaf.shape))
    values = rng.standard_normal(leaf.shape).astype(np.float32)
    made = jax.numpy.asarray(values).astype(leaf.dtype)
    sharding = getattr(leaf, "sharding", None)
    return jax.device_put(made, sharding) if sharding is not None else made


def _line_in(frames: Any, path: Any) -> int | None:
    """The innermost line of the learner's file among recorded (file, line) frames."""
    target = str(path) if path is not None else None
    return next((line for file, line in frames if file == target), None)


def _defined_line(program: Any, path: Any) -> int | None:
    """The line of the learner's file where a program's function was written, when its debug info says."""
    debug = getattr(getattr(program, "jaxpr", None), "debug_info", None)
    _, _, where = str(getattr(debug, "func_src_info", "") or "").rpartition(" at ")
    file, _, line = where.rpartition(":")
    return int(line) if line.isdigit() and (path is None or file == str(path)) else None


def _as_equation(run: Any) -> Any:
    """A recorded run in the form of the `jit` equation that `program_facts` reads: its parameters, and its
    operands' types as the arrays it ran on had them."""
    from types import SimpleNamespace

    # Each operand's type as a trace of the call has it (a Python number it ran on is a weakly typed scalar, an
    # array its sharding in types, none for one on a single device), so the rebuilt program is the one the
    # learner's jit lowered to and its compile, kept in the persistent cache, serves it.
    operands = [SimpleNamespace(aval=jax.typeof(a)) for a in run.args]
    return SimpleNamespace(params=run.params, invars=operands, outvars=list(run.program.jaxpr.outvars))


def _on_mesh_of(args: Any) -> Any:
    """The arguments' own mesh as the current one, so that a call traced on it lowers on its devices (a
    traced operand knows only the mesh's shape); no mesh when no argument is sharded on one."""
    mesh = sharded_mesh(args)
    return contextlib.nullcontext() if mesh is None else jax.set_mesh(mesh)


def sharded_mesh(tree: Any) -> jax.sharding.Mesh | None:
    """The mesh the first array of `tree` that is sharded on one is sharded on, or None."""
    for leaf in jax.tree_util.tree_leaves(tree):
        mesh = getattr(getattr(leaf, "sharding", None), "mesh", None)
        if isinstance(mesh, jax.sharding.Mesh):
            return mesh
    return None


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


@dataclass(frozen=True)
class Copy:
    """A full copy of an argument made by a traced function: a second buffer holding its values."""

    arg: int
    via: str
    """How: `copy` (`jnp.array(x)`, `x.copy()`), `device_put` (a forced copy), or `returned by name`."""
    line: int | None


def argument_copies(fn: Callable[..., Any], *args: Any, path: Any = None) -> list[Copy]:
    """Call `fn(*args)` for real and list each full copy it made of one of its arguments, in order.

    A copy kept aside (a backup in a global) is as much a second buffer as one passed on, and so
    is an argument a jitted call returns unchanged: XLA must copy it to return it, all the more
    when the call donates it. What the call ran says so, never a trace made beside it. Arguments may
    be `jax.ShapeDtypeStruct`s (made into random arrays first).
    """
    from course.grading.observe.calls.executions import record_runs

    concrete = jax.tree_util.tree_map(_materialized, args)
    inputs = jax.tree_util.tree_leaves(concrete)
    with record_runs(programs=True) as rec:
        out = fn(*concrete)
        leaves = jax.tree_util.tree_leaves(out)
        jax.block_until_ready([x for x in leaves if not (isinstance(x, jax.Array) and x.is_deleted())])
    position = {id(a): i for i, a in enumerate(inputs)}
    found = []
    for run in rec.runs:
        for operand, via in _copied_operands(run):
            if operand < len(run.args) and id(run.args[operand]) in position:
                found.append(Copy(position[id(run.args[operand])], via, _line_in(run.frames, path)))
    return found


def _copied_operands(run: Any) -> list[tuple[int, str]]:
    """(operand, how) for each operand a program run returned a full copy of: an eager copy, a `device_put` that
    copies, or a jit of the learner's that returns an argument as it came."""
    if run.fun_name == "device_put":
        return [(i, "device_put") for i, s in enumerate(run.params.get("copy_semantics", ())) if "COPY" in str(s)]
    program = run.program
    if program is None:
        return []
    inner = program.jaxpr
    if run.helper:
        single = inner.eqns[0].primitive.name if len(inner.eqns) == 1 else ""
        return [(0, "copy")] if single in ("copy", "copy_p") else []
    position = {v: i for i, v in enumerate(inner.invars)}
    copied = {e.outvars[0]: e.invars[0] for e in inner.eqns if e.primitive.name in ("copy", "copy_p")}
    returned = []
    for out in inner.outvars:
        source = copied.get(out, out) if not isinstance(out, jax.extend.core.Literal) else None
        if source is not None and not isinstance(source, jax.extend.core.Literal) and source in position:
            returned.append((position[source], f"returned by `{run.params.get('name', 'jit')}`"))
    return returned
