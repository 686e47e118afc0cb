"""Meshes and shardings in the course's words: `P(...)` notation, equivalence, shard shapes and bytes.

Two shardings that place every element on the same devices can still differ under `==` (a mesh
with Explicit axes against the same devices with Auto axes, `P('x')` against `P('x', None)`), so
a check compares them with `is_equivalent_to(other, ndim)` and prints them as `P(...)`.

`np.asarray` of a sharded result reads one copy of each block, so a result that claims to be
replicated while its devices hold different values looks right there; `shard_mismatches` compares
the block every device holds. `traced_once` traces, lowers and compiles a learner's function once
and runs that executable, so the values, the jaxpr and the HLO a grader reads come from one program.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import numpy as np
from jax.sharding import AxisType, NamedSharding, PartitionSpec

from course.grading.feedback import fail
from course.grading.judge.source import describe_exception, learner_frames, learner_location

__all__ = [
    "ShardMismatch",
    "Traced",
    "assert_mesh",
    "call_explained",
    "call_traced",
    "assert_sharding",
    "differing_copies",
    "per_device_bytes",
    "shard_mismatches",
    "shard_shapes",
    "sharding_text",
    "spec_text",
    "traced_once",
]


def spec_text(spec: PartitionSpec | None) -> str:
    """A PartitionSpec written as in code, e.g. `P('x', 'y')` or `P()`."""
    if spec is None:
        return "no spec"
    parts = []
    for entry in spec:
        if entry is None:
            parts.append("None")
        elif isinstance(entry, tuple):
            parts.append("(" + ", ".join(repr(a) for a in entry) + ")")
        else:
            parts.append(repr(entry))
    return f"P({', '.join(parts)})"


def sharding_text(value: Any) -> str:
    """How an array (or a sharding) is laid out: `P('x', 'y')`, or which single device holds it."""
    sharding = getattr(value, "sharding", value)
    if isinstance(sharding, NamedSharding):
        return spec_text(sharding.spec)
    devices = getattr(sharding, "device_set", None)
    if devices is not None and len(devices) == 1:
        return f"one device only ({next(iter(devices))})"
    if getattr(sharding, "is_fully_replicated", False):
        return "replicated on every device (P())"
    return f"a {type(sharding).__name__}"


def assert_sharding(got: Any, expected: jax.sharding.Sharding, *, name: str, hint: str = "") -> None:
    """Fail unless `got` (an array) is laid out like `expected`, compared with `is_equivalent_to`."""
    sharding = getattr(got, "sharding", None)
    ndim = len(getattr(got, "shape", ()))
    if sharding is not None and sharding.is_equivalent_to(expected, ndim):
        return
    fail(f"{name} is sharded {sharding_text(got)}, expected {sharding_text(expected)} on the mesh "
         f"{_mesh_text(expected)}.{' ' + hint if hint else ''}")


def _mesh_text(sharding: Any) -> str:
    """The mesh of a NamedSharding as `{'x': 2, 'y': 4}`, or '' for other shardings."""
    mesh = getattr(sharding, "mesh", None)
    return str(dict(mesh.shape)) if mesh is not None else ""


def shard_shapes(x: jax.Array) -> list[tuple[int, ...]]:
    """The shape of the block each device holds, in device order."""
    return [tuple(s.data.shape) for s in sorted(x.addressable_shards, key=lambda s: s.device.id)]


def differing_copies(x: jax.Array) -> str:
    """'' when every device holding a copy of a block holds the same values, else which devices differ.

    An array's sharding is a claim: `shard_map(..., out_specs=P(), check_vma=False)` marks a result
    replicated whatever each device computed, and reading it whole shows one device's copy only.
    So a replicated result is checked by comparing what every device holds.
    """
    groups: dict[str, list[tuple[int, np.ndarray]]] = {}
    for shard in sorted(x.addressable_shards, key=lambda s: s.device.id):
        groups.setdefault(repr(shard.index), []).append((shard.device.id, np.asarray(shard.data)))
    for copies in groups.values():
        kinds: list[tuple[np.ndarray, list[int]]] = []
        for device, data in copies:
            same = next((ids for value, ids in kinds if np.array_equal(value, data, equal_nan=True)), None)
            if same is None:
                kinds.append((data, [device]))
            else:
                same.append(device)
        if len(kinds) > 1:
            return "; ".join(f"device{'s' if len(ids) > 1 else ''} {', '.join(map(str, ids))} "
                             f"{'hold' if len(ids) > 1 else 'holds'} {_values_text(value)}"
                             for value, ids in kinds[:4]) + ("; ..." if len(kinds) > 4 else "")
    return ""


def _values_text(value: np.ndarray) -> str:
    """A block's values for a message: the number itself for a scalar, else its first element."""
    if value.size == 1:
        return f"{value.reshape(()).item():.6g}"
    return f"a block starting {value.reshape(-1)[0].item():.6g}"


def per_device_bytes(tree: Any) -> int:
    """Bytes one device holds of every leaf of `tree` (arrays or ShapeDtypeStructs with a sharding)."""
    total = 0
    for leaf in jax.tree_util.tree_leaves(tree):
        shape = leaf.sharding.shard_shape(tuple(leaf.shape))
        total += math.prod(shape) * np.dtype(leaf.dtype).itemsize
    return total


def assert_mesh(mesh: Any, *, shape: Sequence[int], names: Sequence[str], name: str = "the mesh") -> None:
    """Fail unless `mesh` is a Mesh over all devices with these axis sizes and names, every axis Explicit."""
    if not isinstance(mesh, jax.sharding.Mesh):
        fail(f"{name} should be a jax.sharding.Mesh, but it is a {type(mesh).__name__}")
    want = dict(zip(names, shape, strict=True))
    if tuple(mesh.axis_names) != tuple(names) or dict(mesh.shape) != want:
        fail(f"{name} has axes {dict(mesh.shape)}, expected {want} (names in that order)")
    devices = list(np.asarray(mesh.devices).flat)
    if sorted(d.id for d in devices) != sorted(d.id for d in jax.devices()):
        fail(f"{name} uses devices {sorted(d.id for d in devices)}, expected each of the "
             f"{jax.device_count()} devices once")
    auto = [n for n, t in zip(mesh.axis_names, mesh.axis_types, strict=True) if t != AxisType.Explicit]
    if auto:
        kinds = ", ".join(getattr(t, "name", str(t)) for t in mesh.axis_types)
        fail(f"{name} has axis types ({kinds}); every axis must be Explicit, so that the sharding is "
             "part of each array's type and a mismatch is an error instead of a silent copy. "
             "`jax.make_mesh(shape, names, axis_types=(AxisType.Explicit,) * len(shape))` makes one "
             "(a bare `Mesh(devices, names)` is Auto).")


_NO_VALUE = (jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError,
             jax.errors.TracerBoolConversionError, jax.errors.TracerIntegerConversionError)
# What tracing a learner's function raises that the course can explain (a value asked of a tracer, a spec
# JAX refuses, an axis name the mesh lacks); anything else is reported as it was raised.
_TRACING_ERRORS = (*_NO_VALUE, ValueError, RuntimeError, AssertionError, NameError, KeyError)


def call_traced(fn: Callable[..., Any], *args: Any, name: str, path: Path | None = None,
                jaxpr: bool = False) -> Any:
    """`jax.jit(fn)(*args)`, or `jax.make_jaxpr(fn)(*args)`, explaining the usual tracing mistakes.

    A Python number taken from a traced value, `jax.set_mesh` inside the function, and a
    `shard_map` whose specs JAX refuses each fail the check with the learner's line.
    """
    try:
        return jax.make_jaxpr(fn)(*args) if jaxpr else jax.jit(fn)(*args)
    except _TRACING_ERRORS as exc:
        _explain_tracing(exc, name, path, args)
        raise  # the platform reports it with the learner's line


def call_explained(fn: Callable[..., Any], *args: Any, name: str, path: Path | None = None) -> Any:
    """`fn(*args)` under `jax.jit` (`programs.call_jitted`), with `call_traced`'s explanations of the
    learner's mistakes.

    A judge's check uses it: there `fn` is the learner's function seen from the judge, which the
    executor jits and runs, and only its values (or what it raised, with the learner's line) come back.
    """
    try:
        from course.grading.observe.calls.programs import call_jitted

        return call_jitted(fn, *args)
    except _TRACING_ERRORS as exc:
        _explain_tracing(exc, name, path, args)
        raise  # the platform reports it with the learner's line


def _explain_tracing(exc: Exception, name: str, path: Path | None, args: Any = ()) -> None:
    """Fail the check with the course's words for a tracing mistake; return for any other error."""
    if isinstance(exc, _NO_VALUE):
        fail(f"{name} must work under `jax.jit`, where values are traced and have no number yet; "
             f"your code asked for one{learner_location(exc.__traceback__, path)} (`float(...)`, "
             "`.item()`, `np.asarray(...)` or an `if` on a value). Keep the result a jax.Array and return it.")
    where = learner_location(exc.__traceback__, path)
    why = _axis_mistake(exc, name, _mesh_axes(args), learner_frames(exc.__traceback__, path), where)
    why = why or (_spec_mistake(exc, name, where) if isinstance(exc, ValueError | RuntimeError) else "")
    if why:
        fail(why)


def _mesh_axes(args: Any) -> tuple[str, ...]:
    """The axis names of the mesh the arguments are sharded over, or () when none is."""
    for leaf in jax.tree_util.tree_leaves(args):
        mesh = getattr(getattr(leaf, "sharding", None), "mesh", None)
        if mesh is not None:
            return tuple(str(a) for a in mesh.axis_names)
    return ()


# JAX's words for a spec that names an axis the mesh lacks, and the quoted names in a line of code.
_REFERS_TO = re.compile(r"refers to '([^']+)'|unbound axis name: ([\w-]+)")
_QUOTED = re.compile(r"""['"]([A-Za-z_][\w]*)['"]""")


def _axis_mistake(exc: BaseException, name: str, axes: tuple[str, ...], frames: list[Any], where: str) -> str:
    """The course's explanation when the code names a mesh axis the mesh does not have, or ''.

    In a `shard_map`'s specs JAX says "in_specs refers to 'ring'"; inside the function, a collective
    over an unknown axis fails with a bare AssertionError (or a NameError for `axis_index`), so the
    name is looked for in the learner's line; `mesh.shape["ring"]` is a KeyError of the name.
    """
    if not axes:
        return ""
    named = [a or b for a, b in _REFERS_TO.findall(str(exc))]
    line = frames[-1].line if frames and frames[-1].line else ""
    if not named and isinstance(exc, AssertionError | NameError):
        named = [q for q in _QUOTED.findall(line) if q not in axes]
    if not named and isinstance(exc, KeyError) and "mesh" in line and exc.args and isinstance(exc.args[0], str):
        named = [exc.args[0]]  # `mesh.shape["ring"]` on a mesh without that axis
    unknown = [a for a in named if a not in axes]
    if not unknown:
        return ""
    return (f"{name} raised {describe_exception(exc)}{where}: it names the mesh axis {unknown[0]!r}, but the "
            f"mesh it is given has the axes {axes}. Take the names from the mesh (`mesh.axis_names`) instead "
            "of writing them in: the same code must run on any mesh of that shape.")


# JAX's words for a bare PartitionSpec used where no mesh is set (`reshard`, `out_sharding=`, a sharding
# constraint). JAX's advice names `jax.set_mesh`, which the learner's code need not call: matched apart from it.
_NO_MESH = ("not under a mesh context", "requires a non-empty mesh in context")
_GOT_SPEC = re.compile(r"Got (P\(.*\))")


def _spec_mistake(exc: ValueError | RuntimeError, name: str, where: str) -> str:
    """The course's explanation of a mesh or shard_map error JAX raised while tracing, or ''."""
    text = str(exc)
    if "`set_mesh` can only be used outside" in text:
        return (f"{name} calls `jax.set_mesh`{where}, which cannot run inside `jax.jit`. The mesh is an "
                "argument: pass it to `jax.shard_map(..., mesh=mesh)` instead of setting it.")
    if any(words in text for words in _NO_MESH):
        spec = _GOT_SPEC.search(text)
        what = f"the bare spec `{spec.group(1)}`" if spec else "a bare PartitionSpec"
        return (f"{name} gives {what} while no mesh is set{where}. A PartitionSpec names mesh axes, not "
                "the mesh, so JAX cannot tell which devices it means. Build the sharding from the mesh your "
                "function is given, `NamedSharding(mesh, spec)`, or work inside `jax.shard_map(..., mesh=mesh)`.")
    if "out_specs which require replication" in text:
        return (f"{name}'s `shard_map` claims with its `out_specs` that a result is the same on every device, "
                f"and JAX cannot prove it{where}. Only a collective over every mesh axis the spec leaves out "
                "(a `psum` or `pmean` over all of them) makes a value equal everywhere; over fewer axes, "
                "it still differs between devices.")
    if "in_specs passed to shard_map" in text:
        return (f"{name}'s `shard_map` was given `in_specs` that differ from how its argument is sharded"
                f"{where}. On an Explicit mesh the spec must be the argument's own (or left out). "
                f"JAX said: {describe_exception(exc)}")
    return ""



@dataclass(frozen=True)
class ShardMismatch:
    """One device whose block of a result differs from the expected values there."""

    device: int
    block: str
    """The block's place in the whole array, as indexing text: `[0:6, :]`."""
    worst: float
    """The largest absolute difference inside the block."""


def shard_mismatches(got: jax.Array, expected: Any, *, rtol: float = 1e-5, atol: float = 1e-5) -> list[ShardMismatch]:
    """The devices whose own block of `got` differs from `expected` at that block's place, in device order."""
    want = np.asarray(expected)
    found = []
    for shard in sorted(got.addressable_shards, key=lambda s: s.device.id):
        block, target = np.asarray(shard.data), want[shard.index]
        if block.shape != target.shape or not np.allclose(block, target, rtol=rtol, atol=atol, equal_nan=True):
            worst = float(np.max(np.abs(block - target))) if block.shape == target.shape else float("inf")
            found.append(ShardMismatch(int(shard.device.id), _index_text(shard.index, want.shape), worst))
    return found


def _index_text(index: tuple[slice, ...], shape: tuple[int, ...]) -> str:
    """`[0:6, :]` for a shard's index into an array of `shape` (`[]` for a scalar)."""
    parts = []
    for sl, size in zip(index, shape, strict=False):
        start, stop, _ = sl.indices(size) if isinstance(sl, slice) else (sl, sl + 1, 1)
        parts.append(":" if (start, stop) == (0, size) else f"{start}:{stop}")
    return f"[{', '.join(parts)}]"


@dataclass(frozen=True)
class ProgramText:
    """A program compiled in the executor, as the judge sees it: its optimized HLO text."""

    hlo_text: str


@dataclass(frozen=True)
class Traced:
    """A learner's function traced, lowered and compiled once for one case, and that executable's result."""

    jaxpr: Any
    """The closed jaxpr of the traced function (walk it with `jaxprs.walk_eqns`)."""
    program: Any
    """The `course.grading.observe.calls.programs.Program` compiled from it: `.hlo_text`, `.memory`, a call runs it
    (in a judge's check, a `ProgramText`: the text the executor's compile gave)."""
    out: Any
    """What the compiled program returned for the traced arguments."""

    @property
    def hlo(self) -> str:
        """The optimized HLO text of the compiled program."""
        return str(self.program.hlo_text)


def traced_once(fn: Callable[..., Any], *args: Any, name: str, path: Path | None = None,
                static: tuple[Any, ...] = ()) -> Traced:
    """`jax.jit(fn)` traced, lowered and compiled once for `args` (with `static`, a mesh say, passed after them to
    every call, never traced), then run; tracing mistakes as in `call_traced`. In a judge's check, where `fn` is the
    learner's function seen from afar, the executor does all of it and sends the trace (as data,
    `course.engine.wire.jaxprs`), the compiled program's text and the result: every conclusion is drawn here."""
    from course.grading.observe.calls.programs import compile_lowered
    from course.grading.observe.calls.strict_runs import runs_here

    if not runs_here(fn):
        jaxpr, hlo, out = fn.traced_once(*args, static=static, name=name)
        return Traced(jaxpr, ProgramText(str(hlo)), out)
    if static:
        fn = _with_static(fn, static)
    try:
        traced = jax.jit(fn).trace(*args)
    except _TRACING_ERRORS as exc:
        _explain_tracing(exc, name, path, args)
        raise
    except Exception as exc:
        if type(exc).__name__ == "ShardingTypeError":  # explicit mode's illegal sharding; no public home
            fail(_illegal_sharding(exc, name, learner_location(exc.__traceback__, path)))
        raise
    program = compile_lowered(traced.lower(), name)
    return Traced(traced.jaxpr, program, program(*args))


def _with_static(fn: Callable[..., Any], static: tuple[Any, ...]) -> Callable[..., Any]:
    """`fn` with `static` passed after the traced arguments (as a grader's `lambda *a: fn(*a, mesh)` does)."""
    def call(*args: Any) -> Any:
        return fn(*args, *static)

    return call


def _illegal_sharding(exc: Exception, name: str, where: str) -> str:
    """The course's words for explicit mode refusing an operation because of its operands' shardings."""
    text = str(exc).strip()
    said = text.splitlines()[0] if text else type(exc).__name__
    if "Contracting dimensions are sharded" in text:
        return (f"{name} multiplies over a dimension that is split across devices{where}, and on an Explicit "
                "mesh JAX will not guess where the result lives: each device holds only part of the sum. Say "
                "it, `jnp.dot(a, b, out_sharding=NamedSharding(mesh, P()))` for the whole sum on every device, "
                f"or write the psum yourself in a `shard_map`. JAX said: {said}")
    if "illegally sharded" in text:
        return (f"{name} combines arrays whose shardings do not fit together{where}. On an Explicit mesh each "
                "array's sharding is part of its type, and a result may not use one mesh axis for two of its "
                "dimensions (a bias sharded over an axis, added to rows sharded over the same axis, would). "
                "Reshard the operand that should be whole first, `reshard(v, NamedSharding(mesh, P()))`, or "
                f"pass it to a `shard_map` that says how each device sees it. JAX said: {said}")
    if "slicing on sharded dims" in text:
        return (f"{name} slices an array along a dimension that is split across devices{where}: on an Explicit "
                "mesh JAX will not cut one device's block out of a sharded dimension. Pick what you need inside "
                "the `shard_map`, where each device sees its own block (to share one device's result, psum a "
                "buffer that only that device fills), or reshard the array first. "
                f"JAX said: {said}")
    return (f"{name} asks for an operation whose operands' shardings JAX refuses on an Explicit mesh{where}. "
            f"JAX said: {said}")
