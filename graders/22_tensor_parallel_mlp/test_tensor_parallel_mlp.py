"""Grader for `tensor_parallel_mlp`: the MLP's values on every device, a replicated result, and one all-reduce of
the (B, D) partial sums, in float32, as the only communication."""

from __future__ import annotations

import math
from pathlib import Path
from types import ModuleType

import jax
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from course.grading import (
    Traced,
    assert_dtype,
    assert_is_array,
    assert_sharding,
    call_jitted,
    fail,
    hlo_collective_shapes,
    jaxpr_collectives,
    line_text,
    matmuls_in,
    shard_mismatches,
    traced_once,
)

AXIS = "tp"
DEVICES = 8
FIXED = (12, 24, 64)  # (B, D, F): the hidden width F is a multiple of 8; no two shapes alike, even transposed
SPECS = {"x": P(), "w1": P(None, AXIS), "b1": P(AXIS), "w2": P(AXIS, None), "b2": P()}


def _mesh() -> jax.sharding.Mesh:
    """The grader's own 1-D Explicit mesh of 8 devices named 'tp'."""
    return jax.make_mesh((DEVICES,), (AXIS,), axis_types=(AxisType.Explicit,))


def _sizes(run_seed: int) -> list[tuple[int, int, int]]:
    """(B, D, F): a small one, the fixed one, and one drawn for the run (D and F multiples of 8)."""
    rng = np.random.default_rng(run_seed)
    return [(4, 8, 16), FIXED, (int(rng.integers(1, 20)), DEVICES * int(rng.integers(1, 5)),
                                 DEVICES * int(rng.integers(2, 9)))]


def _host(rng: np.random.Generator, b: int, d: int, f: int) -> dict[str, np.ndarray]:
    """float32 inputs scaled so gelu sees values on both sides of zero, and a b2 far from zero."""
    data = {"x": rng.standard_normal((b, d)), "w1": rng.standard_normal((d, f)) / np.sqrt(d),
            "b1": rng.normal(0.0, 0.5, f), "w2": rng.standard_normal((f, d)) / np.sqrt(f),
            "b2": rng.uniform(1.0, 3.0, d) * rng.choice([-1.0, 1.0], d)}
    return {k: v.astype(np.float32) for k, v in data.items()}


def _placed(mesh: jax.sharding.Mesh, host: dict[str, np.ndarray]) -> tuple[jax.Array, ...]:
    """(x, w1, b1, w2, b2) placed by the grader as the lesson says."""
    return tuple(jax.device_put(host[k], NamedSharding(mesh, SPECS[k])) for k in SPECS)


def _reference(h: dict[str, np.ndarray], *, exact: bool = False) -> np.ndarray:
    """gelu(x @ w1 + b1) @ w2 + b2 in float64: `jax.nn.gelu`'s default tanh approximation, or the exact erf form."""
    p = {k: v.astype(np.float64) for k, v in h.items()}
    z = p["x"] @ p["w1"] + p["b1"]
    if exact:
        gelu = 0.5 * z * (1.0 + np.vectorize(math.erf)(z / math.sqrt(2.0)))
    else:
        gelu = 0.5 * z * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (z + 0.044715 * z**3)))
    return gelu @ p["w2"] + p["b2"]


def _run(sub: ModuleType, path: Path, mesh: jax.sharding.Mesh, args: tuple) -> tuple[Traced, jax.Array]:
    """`mlp(x, w1, b1, w2, b2, mesh)` traced, compiled and run once; (the case, its result)."""
    case = traced_once(sub.mlp, *args, static=(mesh,), name="`mlp`", path=path)
    return case, assert_is_array(case.out, "`mlp(x, w1, b1, w2, b2, mesh)`")


def _call(sub: ModuleType, mesh: jax.sharding.Mesh, args: tuple) -> jax.Array:
    """`mlp(x, w1, b1, w2, b2, mesh)` run under `jax.jit` (in the judge: jitted and run beside their code)."""
    return assert_is_array(call_jitted(sub.mlp, *args, mesh), "`mlp(x, w1, b1, w2, b2, mesh)`")


def _fixed(sub: ModuleType, path: Path, rng: np.random.Generator) -> tuple[Traced, jax.Array]:
    """The fixed-size case."""
    mesh = _mesh()
    return _run(sub, path, mesh, _placed(mesh, _host(rng, *FIXED)))


@pytest.mark.judge
@pytest.mark.points(1)
def test_traceable(submission: ModuleType, submission_path: Path, rng: np.random.Generator) -> None:
    """`mlp` can be traced and compiled (under `jax.jit`) and returns one array."""
    _fixed(submission, submission_path, rng)


@pytest.mark.judge
@pytest.mark.points(3)
def test_values(submission: ModuleType, rng: np.random.Generator, run_seed: int) -> None:
    """Every device holds gelu(x @ w1 + b1) @ w2 + b2, in float32."""
    mesh = _mesh()
    for b, d, f in _sizes(run_seed):
        host = _host(rng, b, d, f)
        want = _reference(host)
        got = _call(submission, mesh, _placed(mesh, host))
        name = f"`mlp(...)` for B, D, F = {b}, {d}, {f}"
        assert_dtype(got, np.float32, name)
        if got.shape != want.shape:
            fail(f"{name} has shape {got.shape}, expected {want.shape}.")
        atol = 1e-5 * float(np.abs(want).max())
        bad = shard_mismatches(got, want, rtol=1e-4, atol=atol)
        if bad:
            where = ", ".join(f"device {m.device}" for m in bad[:4]) + (" and more" if len(bad) > 4 else "")
            why = _why(got, host, want)  # the judge sees no jaxpr: test_float32_sum names a 16-bit line
            fail(f"{name} is wrong on {where} (largest error {max(m.worst for m in bad):.3g}).{why}")


def _why(got: jax.Array, host: dict[str, np.ndarray], want: np.ndarray) -> str:
    """What the wrong values look like: 8 copies of b2, a mean instead of a sum, bfloat16 rounding, or devices apart."""
    blocks = [np.asarray(s.data).astype(np.float64) for s in sorted(got.addressable_shards, key=lambda s: s.device.id)]
    first = blocks[0]
    if first.shape != want.shape:
        return " Each device holds only a piece of it; every device should hold the whole (B, D) result."
    if not all(np.allclose(blk, first, rtol=1e-6, atol=1e-6) for blk in blocks[1:]):
        return (" The devices hold different (B, D) arrays while the result claims to be replicated (P()): each "
                "kept its own partial sum. A psum over 'tp' adds the 8 partial sums and leaves the total on every "
                "device.")
    b2 = host["b2"].astype(np.float64)
    guesses = [
        (want + (DEVICES - 1) * b2, " It is the answer plus 7 more copies of b2: b2 was added to each device's "
                                    "partial sum before the psum, so the psum counted it 8 times. Add it once, "
                                    "after the psum."),
        ((want - b2) / DEVICES + b2, " The partial sums were averaged (pmean), not added: the result is 1/8 of "
                                     "the matmul. The 8 devices each hold a different part of the sum; psum it."),
        ((want - b2) / DEVICES, " It is 1/8 of the answer without b2: the partial sums were averaged, not added."),
    ]
    guesses.append((_reference(host, exact=True), " It is the MLP with the exact (erf) gelu: `jax.nn.gelu`'s "
                                                  "default is the tanh approximation (approximate=True)."))
    for value, why in guesses:
        if np.allclose(first, value, rtol=1e-4, atol=1e-4 * float(np.abs(value).max())):
            return why
    if np.allclose(first, want, rtol=3e-2, atol=3e-2 * float(np.abs(want).max())):
        return (" It agrees only to about 2 or 3 digits, as a 16-bit float does: keep x, the weights, "
                "the partial sums and their psum in float32.")
    if not np.allclose(first, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max())):
        return (" Each device's hidden units are its own columns of w1 and b1, and gelu acts on each one alone; "
                "only the second matmul's partial (B, D) sums are added across devices, once.")
    return (" Device 0 is right, the others are not: the result claims to be replicated (P()) but the devices "
            "never combined their partial sums.")


@pytest.mark.judge
@pytest.mark.points(1)
def test_output_replicated(submission: ModuleType, rng: np.random.Generator) -> None:
    """The (B, D) result is replicated: every device holds all of it (P())."""
    mesh = _mesh()
    got = _call(submission, mesh, _placed(mesh, _host(rng, *FIXED)))
    b, d, _ = FIXED
    if got.shape != (b, d):
        fail(f"`mlp(...)` has shape {got.shape}, expected {(b, d)}.")
    assert_sharding(got, NamedSharding(_mesh(), P()), name="`mlp(x, w1, b1, w2, b2, mesh)`",
                    hint="The next layer wants the whole activation on every device, as x was: one psum "
                         "of the partial sums leaves it there (out_specs=P(), or out_sharding=P()). A "
                         "reduce-scatter leaves each device only a piece.")


def _what(shape: tuple[int, ...]) -> str:
    """Which array of the MLP a collective's shape is, in the fixed case (w1 and w2 told apart by their order)."""
    b, d, f = FIXED
    names = {(b, d): "the (B, D) result", (b, f): "the (B, F) hidden activations", (d, f): "w1", (f, d): "w2",
             (f,): "b1", (d,): "b2"}
    if tuple(shape) in names:
        return names[tuple(shape)]
    return next((n for s, n in names.items() if sorted(s) == sorted(shape)), f"a piece of shape {tuple(shape)}")


def _a(op: str) -> str:
    """`an all-gather`, `a reduce-scatter`."""
    return f"{'an' if op[0] in 'aeiou' else 'a'} {op}"


@pytest.mark.judge
@pytest.mark.points(2)
def test_one_all_reduce(submission: ModuleType, submission_path: Path, rng: np.random.Generator) -> None:
    """The compiled program adds across devices exactly once: one all-reduce, of the (B, D) result."""
    case, _ = _fixed(submission, submission_path, rng)
    b, d, f = FIXED
    reduced = [op for op in hlo_collective_shapes(case.hlo) if op.op == "all-reduce"]
    if not reduced:
        fail("the compiled `mlp` has no all-reduce. Row-parallel w2 leaves each device a partial (B, D) sum of "
             "its own hidden units; one psum of it is all the communication the layer needs.")
    if len(reduced) > 1:
        listed = ", ".join(f"{op.text()} ({_what(op.shape)})" for op in reduced)
        own = next((op for op in reduced if sorted(op.shape) == sorted((b, f // DEVICES))), None)
        why = ("an all-reduce of the hidden activations means w1 was split by rows, so every device had to add up "
               "the pre-activations first." if own is None else
               f"the all-reduce of {own.text()} adds up each device's own {f // DEVICES} hidden units, which are "
               "whole already (w1 is split by columns): a psum after the first matmul sums different units into "
               "one. Apply gelu and the second matmul to them, and psum only the (B, D) partial sums.")
        fail(f"the compiled `mlp` runs {len(reduced)} all-reduces: {listed}. Column-parallel w1 needs none "
             f"(each device computes whole hidden units of its own); {why}")
    (op,) = reduced
    if op.elements != b * d:
        fail(f"the compiled `mlp` all-reduces {op.text()} ({_what(op.shape)}); the one sum the layer needs is "
             f"of the (B, D) = {(b, d)} partial results of the second matmul.")


@pytest.mark.judge
@pytest.mark.points(1)
def test_no_other_collectives(submission: ModuleType, submission_path: Path, rng: np.random.Generator) -> None:
    """Nothing else moves: no all-gather, reduce-scatter, all-to-all or collective-permute."""
    case, _ = _fixed(submission, submission_path, rng)
    why = {"all-gather": "Gathering undoes the split: each device then holds, and multiplies, what the others "
                         "already have.",
           "reduce-scatter": "A reduce-scatter then an all-gather is an all-reduce in two steps; the result is "
                             "wanted whole, so one psum does it.",
           "all-to-all": "An all-to-all reshards an array, here most likely w1 into rows; w1 is already split "
                         "the way the layer needs, by columns.",
           "collective-permute": "A collective-permute passes pieces between devices; nothing needs to move "
                                 "before the one psum."}
    for op in hlo_collective_shapes(case.hlo):
        if op.op in why:
            fail(f"the compiled `mlp` runs {_a(op.op)} of {op.text()} ({_what(op.shape)}). {why[op.op]}")


@pytest.mark.judge
@pytest.mark.points(1)
def test_float32_sum(submission: ModuleType, submission_path: Path, rng: np.random.Generator) -> None:
    """The partial sums are computed and added in float32: no matmul operand or result, or collective, in 16 bits."""
    case, _ = _fixed(submission, submission_path, rng)
    for c in jaxpr_collectives(case.jaxpr, path=submission_path):
        low = [t for t in c.dtypes if t != "float32"]
        if low:
            fail(f"`mlp` makes a {c.lax_name} of {low[0]} values at {line_text(c.line, submission_path)}. "
                 "Rounding each device's partial sum to a 16-bit float before adding costs 3 or 4 digits "
                 "of the result; on this layer's (B, D) sums, float32 is the right precision.")
    for m in matmuls_in(case.jaxpr, path=submission_path):
        low = [t for t in (m.lhs_dtype, m.rhs_dtype) if t != "float32"]
        if low:
            fail(f"`mlp` computes {m.describe()} at {line_text(m.line, submission_path)}: it multiplies {low[0]} "
                 "operands, rounded from float32 before the product, which costs 3 or 4 digits even when it "
                 "accumulates in float32. Multiply the float32 arrays as they are.")
        if m.out_dtype != "float32":
            fail(f"`mlp` computes {m.describe()} at {line_text(m.line, submission_path)}: its partial sums "
                 f"come out {m.out_dtype}. Keep the matmuls and their sum in float32.")

