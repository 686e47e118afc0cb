"""Grader for `ring_allreduce`: the sum on every row, the sharding kept, a one-way ring of 14 chunk-sized ppermutes."""

from __future__ import annotations

import math
from pathlib import Path
from types import ModuleType
from typing import Any

import jax
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from course.grading import (
    Collective,
    assert_array,
    assert_dtype,
    assert_is_array,
    assert_sharding,
    by_call,
    call_explained,
    fail,
    hlo_collectives,
    jaxpr_collectives,
    sharding_text,
    total_steps,
    traced_once,
)

DEVICES = 8
STEPS = 2 * (DEVICES - 1)
# The axis is named "peers", not the lesson's "ring", so a name written into the code fails every
# check under every seed; the values are also checked on a mesh named "ring", so "peers" cannot be
# written in either.
AXIS = "peers"


def _mesh(name: str = AXIS) -> jax.sharding.Mesh:
    """A 1-D Explicit mesh over the 8 devices with one axis of this name."""
    return jax.make_mesh((DEVICES,), (name,), axis_types=(AxisType.Explicit,))


def _rows(rng: np.random.Generator, n: int, mesh: jax.sharding.Mesh) -> tuple[jax.Array, np.ndarray]:
    """A random float32 (8, n) array sharded by rows, and its NumPy values."""
    data = rng.standard_normal((DEVICES, n)).astype(np.float32)
    return jax.device_put(data, NamedSharding(mesh, P(mesh.axis_names[0]))), data


def _case(sub: ModuleType, path: Path, x: jax.Array, mesh: jax.sharding.Mesh) -> Any:
    """`ring_allreduce(x, mesh)` traced, compiled and run once (`traced_once`, with tracing mistakes explained): its
    trace and its compiled program's text, which a judge's check reads."""
    return traced_once(sub.ring_allreduce, x, static=(mesh,), name="`ring_allreduce`", path=path)


def _ppermutes(sub: ModuleType, path: Path, rng: np.random.Generator) -> tuple[list[Collective], int]:
    """The learner's `lax.ppermute` calls for a random n (a call given a pytree counted once, with all its
    leaves), and that n."""
    mesh = _mesh()
    n = DEVICES * int(rng.integers(3, 20))
    x, _ = _rows(rng, n, mesh)
    found = jaxpr_collectives(_case(sub, path, x, mesh).jaxpr, path=path)
    permutes = by_call(c for c in found if c.primitive == "ppermute")
    if not permutes:
        others = sorted({c.lax_name for c in found})
        fail("`ring_allreduce` makes no `lax.ppermute`" + (f" (it uses {', '.join(others)})" if others else "")
             + ": the ring moves each chunk to a neighbour with `lax.ppermute(chunk, axis, perm)`.")
    return permutes, n


def _at(c: Collective) -> str:
    """' at line N' for a collective whose line in the learner's file is known."""
    return f" at line {c.line}" if c.line else ""


def _called(sub: ModuleType, path: Path, x: jax.Array, mesh: jax.sharding.Mesh) -> Any:
    """`ring_allreduce(x, mesh)` under `jax.jit`, beside the code: a judge's check sees only what it returns."""
    return call_explained(sub.ring_allreduce, x, mesh, name="`ring_allreduce`", path=path)


@pytest.mark.judge
@pytest.mark.points(3)
def test_values(submission: ModuleType, submission_path: Path, rng: np.random.Generator) -> None:
    """Every row of the result is x.sum(0), for n = 8, 64, 200 and 1024."""
    for n, axis in ((8, AXIS), (64, AXIS), (200, "ring"), (1024, "ring")):
        mesh = _mesh(axis)
        x, data = _rows(rng, n, mesh)
        want = np.broadcast_to(data.astype(np.float64).sum(0), data.shape).astype(np.float32)
        name = f"`ring_allreduce(x, mesh)` for n = {n}"
        got = assert_is_array(_called(submission, submission_path, x, mesh), name)
        assert_dtype(got, np.float32, name)
        if got.shape == data.shape:
            _chunks_right(np.asarray(got), want, data, name)
        assert_array(got, want, name=name, rtol=1e-5, atol=1e-5)


def _chunks_right(got: np.ndarray, want: np.ndarray, data: np.ndarray, name: str) -> None:
    """Fail naming, per device, which of its 8 chunks differ from the sum, and why they probably do."""
    n = got.shape[1]
    close = np.isclose(got, want, rtol=1e-5, atol=1e-5).reshape(DEVICES, DEVICES, n // DEVICES).all(axis=2)
    if close.all():
        return
    parts = []
    for device in np.flatnonzero(~close.all(axis=1))[:3]:
        bad = np.flatnonzero(~close[device]).tolist()
        listed = f"chunk{'s' if len(bad) > 1 else ''} {', '.join(map(str, bad))}"
        parts.append(f"device {device}: {'all 8 chunks' if len(bad) == DEVICES else listed}")
    why = _rounded(got, want) or _misplaced(got, want, close) or _reduce_scatter_hint(got, data, close)
    fail(f"{name} differs from x.sum(0) in these chunks of n/8 = {n // DEVICES} column(s): {'; '.join(parts)}"
         f"{' (and more)' if (~close.all(axis=1)).sum() > 3 else ''}. {why}")


def _rounded(got: np.ndarray, want: np.ndarray) -> str:
    """Why sums are all close but rounded: chunks sent in a narrower dtype (told by values; the judge has no jaxpr)."""
    scale = float(np.abs(want).max()) or 1.0
    if not np.allclose(got, want, rtol=2e-2, atol=2e-2 * scale):
        return ""
    return ("Every sum is close, but rounded: chunks sent in a narrower dtype than float32 (bfloat16 keeps about 3 "
            "significant digits) round the running sums at each step, and the error grows round the ring. Send "
            "float32: the ring's cost is the number of steps and chunks, which a narrower dtype does not change.")


def _pairs_missing(c: Collective, missing: list[tuple[int, int]]) -> str:
    """'The ppermute at line N has no pair 7→0: JAX fills ... with zeros.'"""
    pairs = ", ".join(f"{s}→{d}" for s, d in missing)
    return (f"The ppermute{_at(c)} has no pair {pairs}: a device that no pair sends to receives zeros (JAX "
            f"fills it in), so the ring never closes. Send every device to its neighbour, wrapping round: "
            f"[(i, (i + 1) % {DEVICES}) for i in range({DEVICES})].")


def _misplaced(got: np.ndarray, want: np.ndarray, close: np.ndarray) -> str:
    """When wrong chunks hold complete sums of other chunks: the all-gather stores them at the wrong index."""
    n = got.shape[1]
    sums = want[0].reshape(DEVICES, n // DEVICES)
    chunks = got.reshape(DEVICES, DEVICES, n // DEVICES)
    for device, position in zip(*np.nonzero(~close), strict=True):
        for k in range(DEVICES):
            if k != position and np.allclose(chunks[device, position], sums[k], rtol=1e-5, atol=1e-5):
                return (f"Device {device} holds the complete sum of chunk {k} where chunk {position} belongs: the "
                        "reduce-scatter is right, but the all-gather stores what arrives at the wrong index. At "
                        "all-gather step s a device receives the chunk its neighbour completed (or received) "
                        "one step earlier; compute that chunk's index from `lax.axis_index` and s.")
    return ""


def _reduce_scatter_hint(got: np.ndarray, data: np.ndarray, close: np.ndarray) -> str:
    """The usual cause when the sums themselves are wrong: the chunk added at a reduce-scatter step."""
    mine = np.isclose(got, data, rtol=1e-5, atol=1e-5).reshape(DEVICES, DEVICES, -1).all(axis=2) & ~close
    note = (" Some wrong chunks still hold the device's own values: the sum of those chunks never arrived."
            if mine.any() else "")
    return (f"{note.strip()} At each reduce-scatter step a device adds its own part of the chunk it just "
            "received, and that chunk's index moves by one per step around the ring; compute it from "
            "`lax.axis_index` and the step.").strip()


@pytest.mark.judge
@pytest.mark.points(1)
def test_sharding_kept(submission: ModuleType, submission_path: Path, rng: np.random.Generator) -> None:
    """The result is sharded like x: one row per device."""
    mesh = _mesh()
    x, _ = _rows(rng, 64, mesh)
    got = assert_is_array(_called(submission, submission_path, x, mesh), "`ring_allreduce(x, mesh)`")
    axis = mesh.axis_names[0]
    if got.shape != x.shape:
        fail(f"`ring_allreduce(x, mesh)` has shape {got.shape} and sharding {sharding_text(got)}; it should "
             f"keep x's shape {x.shape}, one row per device, sharded P({axis!r}). With out_specs=P() the "
             "shard_map claims one device's result is the whole answer.")
    assert_sharding(got, x.sharding, name="`ring_allreduce(x, mesh)`",
                    hint=f"Use out_specs=P({axis!r}) so each device keeps its own summed row, as it holds "
                         "its row of x; the all-gather phase of the ring already gives every device the sum.")


@pytest.mark.judge
@pytest.mark.points(1)
def test_only_collective_permutes(submission: ModuleType, submission_path: Path, rng: np.random.Generator) -> None:
    """The compiled program communicates with collective-permutes only."""
    mesh = _mesh()
    x, _ = _rows(rng, 64, mesh)
    ops = hlo_collectives(_case(submission, submission_path, x, mesh).hlo)
    why = {
        "all-reduce": "An all-reduce is what `psum` compiles to: the very collective you are building.",
        "all-gather": "An all-gather (from `all_gather`) copies whole pieces to every device at once; the "
                      "ring's second half does that job with 7 more ppermute steps.",
        "reduce-scatter": "A reduce-scatter (from `psum_scatter`) is the ring's first half, done for you.",
        "all-to-all": "An all-to-all exchanges pieces between every pair of devices, not only neighbours.",
    }
    for op, text in why.items():
        if ops[op]:
            fail(f"the compiled `ring_allreduce` runs {ops[op]} {op}. {text} Move data with `lax.ppermute` only.")
    if not ops["collective-permute"]:
        fail("the compiled `ring_allreduce` moves no data between devices at all (no collective-permute).")


@pytest.mark.judge
@pytest.mark.points(1)
def test_one_direction(submission: ModuleType, submission_path: Path, rng: np.random.Generator) -> None:
    """Every ppermute sends each device's chunk to its neighbour, all in the same direction."""
    permutes, _ = _ppermutes(submission, submission_path, rng)
    for c in permutes:
        gap = c.missing_pairs(DEVICES)
        if gap is not None and gap[0] in (1, DEVICES - 1):
            fail(f"{_pairs_missing(c, gap[1])} Every device sends to its neighbour and receives from the "
                 "other one, the last to the first included.")
        if c.shift(DEVICES) not in (1, DEVICES - 1):
            pairs = ", ".join(f"{s}→{d}" for s, d in (c.perm or ())[:4])
            fail(f"the ppermute{_at(c)} sends {pairs}{', ...' if len(c.perm or ()) > 4 else ''}: not every "
                 f"device to its neighbour. A ring uses perm [(i, (i + 1) % {DEVICES}) for i in range({DEVICES})] "
                 "(or i - 1): each device talks to one neighbour only, so every link carries one chunk "
                 "per step. Exchanging with devices further away (recursive doubling) sends whole rows.")
    shifts = {c.shift(DEVICES) for c in permutes}
    if len(shifts) > 1:
        right = next(c for c in permutes if c.shift(DEVICES) == 1)
        left = next(c for c in permutes if c.shift(DEVICES) == DEVICES - 1)
        fail(f"the ppermute{_at(right)} sends to the right (i → i+1) and the one{_at(left)} to the left "
             "(i → i-1). Keep one direction for all 14 steps: each link then carries traffic one way, "
             "and the all-gather follows the chunks the reduce-scatter left behind.")


@pytest.mark.judge
@pytest.mark.points(2)
def test_fourteen_steps(submission: ModuleType, submission_path: Path, rng: np.random.Generator) -> None:
    """The ring makes 14 ppermute steps: 7 to reduce-scatter, 7 to all-gather."""
    permutes, _ = _ppermutes(submission, submission_path, rng)
    steps = total_steps(permutes)
    if steps is None:
        c = next(c for c in permutes if c.times is None)
        fail(f"the ppermute{_at(c)} sits inside a `{c.enclosing}`, so the number of steps is not fixed "
             "when the program is built and cannot be counted. Loop with constant bounds: a Python "
             f"`for` over range({DEVICES - 1}), or `lax.fori_loop(0, {DEVICES - 1}, ...)`, which becomes a scan.")
    if steps != STEPS:
        hint = {DEVICES - 1: " That is one phase only, or whole rows passed round the ring.",
                STEPS + 1: " That is one step too many.",
                3: " That looks like recursive doubling."}.get(steps, "")
        fail(f"`ring_allreduce` makes {steps} ppermute steps (counting each loop body as many times as it "
             f"runs, and a ppermute given a tuple once); a ring of {DEVICES} makes {DEVICES - 1} reduce-scatter "
             f"steps then {DEVICES - 1} all-gather steps, {STEPS} in all.{hint}")


@pytest.mark.judge
@pytest.mark.points(1)
def test_chunk_per_step(submission: ModuleType, submission_path: Path, rng: np.random.Generator) -> None:
    """Each ppermute step moves one chunk of n/8 floats."""
    permutes, n = _ppermutes(submission, submission_path, rng)
    chunk = n // DEVICES
    for c in permutes:
        if c.elements != chunk:
            whole = " (a whole row)" if c.elements == n else ""
            pytree = (f" It is given {c.leaves} arrays at once ({', '.join(map(str, c.shapes))}), and "
                      f"`lax.ppermute` of a tuple or list sends every leaf: one ppermute each, all in the same "
                      "step." if c.leaves > 1 else "")
            extra = sorted(c.shapes, key=math.prod)[:-1] if c.leaves > 1 else []
            riders = c.leaves > 1 and math.prod(max(c.shapes, key=math.prod)) == chunk and all(
                math.prod(shape) == 1 for shape in extra)
            why = (" Only the chunk needs to travel: which chunk arrives at step s is arithmetic on "
                   "`lax.axis_index` and s, the same on every device." if riders else
                   " Cutting the row into 8 chunks is what makes the ring cheap: each device sends 2 * 7 / 8 of "
                   "a row in all, instead of 7 whole rows.")
            fail(f"for n = {n} the ppermute{_at(c)} moves {c.elements} numbers{whole} per device per step; a ring "
                 f"step moves one chunk of n/8 = {chunk} floats.{pytree}{why}")
