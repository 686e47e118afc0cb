"""Grader for `collective_matmul`: `x @ w` right on every device and sharded by columns, computed by passing x's
row chunks round a ring of 7 chunk-sized ppermutes while each device multiplies one chunk at a time."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import jax
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from course.grading import (
    BlockFault,
    Collective,
    Traced,
    assert_dtype,
    assert_is_array,
    assert_sharding,
    by_call,
    call_jitted,
    fail,
    hlo_collective_shapes,
    jaxpr_collectives,
    line_text,
    live_jaxpr,
    matmuls_in,
    sharding_text,
    traced_once,
    wrong_blocks,
)

DEVICES = 8
# The axis is not the lesson's name, and the values are also checked on a second name, so a name
# written into the code fails.
AXIS = "devs"
FIXED = (32, 16, 24)  # (M, K, N): an x chunk (4, 16) is smaller than an output block (32, 3), larger than a w block
RTOL, ATOL = 1e-4, 1e-4


def _mesh(name: str = AXIS) -> jax.sharding.Mesh:
    """The grader's own 1-D Explicit mesh of 8 devices with one axis of this name."""
    return jax.make_mesh((DEVICES,), (name,), axis_types=(AxisType.Explicit,))


def _host(rng: np.random.Generator, m: int, k: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """float32 x (M, K) and w (K, N), scaled so every product block is of order one."""
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = (rng.standard_normal((k, n)) / np.sqrt(k)).astype(np.float32)
    return x, w


def _run(sub: ModuleType, path: Path, mesh: jax.sharding.Mesh, x: np.ndarray,
         w: np.ndarray) -> tuple[Traced, jax.Array]:
    """`ag_matmul(x, w, mesh)` with x placed by rows and w by columns, traced, compiled and run once."""
    axis = mesh.axis_names[0]
    xs = jax.device_put(x, NamedSharding(mesh, P(axis, None)))
    ws = jax.device_put(w, NamedSharding(mesh, P(None, axis)))
    case = traced_once(sub.ag_matmul, xs, ws, static=(mesh,), name="`ag_matmul`", path=path)
    return case, assert_is_array(case.out, "`ag_matmul(x, w, mesh)`")


def _call(sub: ModuleType, mesh: jax.sharding.Mesh, x: np.ndarray, w: np.ndarray) -> jax.Array:
    """`ag_matmul(x, w, mesh)` with x placed by rows and w by columns, run under `jax.jit` (in the judge: jitted
    and run beside their code)."""
    axis = mesh.axis_names[0]
    xs = jax.device_put(x, NamedSharding(mesh, P(axis, None)))
    ws = jax.device_put(w, NamedSharding(mesh, P(None, axis)))
    return assert_is_array(call_jitted(sub.ag_matmul, xs, ws, mesh), "`ag_matmul(x, w, mesh)`")


def _fixed(sub: ModuleType, path: Path, rng: np.random.Generator) -> tuple[Traced, jax.Array]:
    """The fixed-size case."""
    return _run(sub, path, _mesh(), *_host(rng, *FIXED))


def _sizes(run_seed: int) -> list[tuple[int, int, int, str]]:
    """(M, K, N, axis name): one row per chunk, the fixed case, and one drawn for the run."""
    rng = np.random.default_rng(run_seed)
    drawn = (DEVICES * int(rng.integers(1, 4)), int(rng.integers(3, 20)), DEVICES * int(rng.integers(1, 4)))
    return [(8, 8, 8, AXIS), (*FIXED, "ring"), (*drawn, AXIS)]


@pytest.mark.judge
@pytest.mark.points(3)
def test_values(submission: ModuleType, rng: np.random.Generator, run_seed: int) -> None:
    """Every device holds its N/8 columns of x @ w, all M rows, in float32."""
    for m, k, n, axis in _sizes(run_seed):
        x, w = _host(rng, m, k, n)
        got = _call(submission, _mesh(axis), x, w)
        name = f"`ag_matmul(x, w, mesh)` for M, K, N = {m}, {k}, {n}"
        assert_dtype(got, np.float32, name)
        if got.shape != (m, n):
            fail(f"{name} has shape {got.shape}, expected {(m, n)}.")
        wrong = _wrong_blocks(got, x, w)  # the judge sees no jaxpr: test_ring_permutes names a missing pair
        if wrong:
            fail(f"{name} is wrong {wrong}")


def _wrong_blocks(got: jax.Array, x: np.ndarray, w: np.ndarray) -> str:
    """'' when every device's block is right; else, per device, which row blocks are wrong and what they hold."""
    m = x.shape[0]
    for shard in got.addressable_shards:
        want = (m, w[:, shard.index[1]].shape[1]) if len(shard.index) > 1 else (m, w.shape[1])
        if shard.data.shape != want:
            return (f"on device {shard.device.id}: it holds a {shard.data.shape} block, where each device should "
                    f"hold all {m} rows of its columns ({want}); the result is sharded {sharding_text(got)}, "
                    "not P(None, axis).")
    chunks = np.split(x.astype(np.float64), DEVICES)
    faults = wrong_blocks(got, lambda index: [c @ w[:, index[1]].astype(np.float64) for c in chunks],
                          rtol=RTOL, atol=ATOL)
    if not faults:
        return ""
    parts: dict[int, list[str]] = {}
    for f in faults:
        what = "zeros" if f.zeros else "other values" if f.holds is None else f"device {f.holds}'s product"
        parts.setdefault(f.device, []).append(f"row block {f.block} holds {what}")
    listed = [f"device {d}: " + ", ".join(p[:3]) + (", ..." if len(p) > 3 else "") for d, p in parts.items()]
    return ("in these blocks of M/8 rows (block r is device r's chunk of x times this device's columns of w): "
            + "; ".join(listed[:3]) + ("; and more devices" if len(listed) > 3 else "") + ". "
            + _why(faults))


def _why(faults: list[BlockFault]) -> str:
    """The usual cause of the wrong blocks seen."""
    reasons = {"zeros" if f.zeros else "other" if f.holds is None else "owner" for f in faults}
    text = []
    if "owner" in reasons:
        text.append("The products are right but written at another device's rows: the chunk a device holds "
                    "after `step` moves started on device (me - step) % 8 when chunks move right (i → i+1), "
                    "and on (me + step) % 8 when they move left. Write its product at that owner's rows.")
    if "zeros" in reasons:
        text.append("Rows left at zero never received their chunk, or its product was never written: a ring "
                    "needs the wrap-around pair (7 → 0 to the right), and each device writes 8 products, one for "
                    "every chunk it holds in turn (its own and the 7 that arrive); is a step's product skipped, or "
                    "written over another's rows?")
    if "other" in reasons or not text:
        text.append("Row block r of every device's result is x's chunk r (the rows device r holds) times that "
                    "device's own columns of w.")
    return " ".join(text)


@pytest.mark.judge
@pytest.mark.points(1)
def test_output_sharding(submission: ModuleType, rng: np.random.Generator) -> None:
    """The (M, N) result is sharded by columns, like w: P(None, axis)."""
    got = _call(submission, _mesh(), *_host(rng, *FIXED))
    m, _, n = FIXED
    name = "`ag_matmul(x, w, mesh)`"
    if got.shape != (m, n):
        fail(f"{name} has shape {got.shape}, expected {(m, n)}.")
    rows = NamedSharding(_mesh(), P(AXIS, None))
    hint = ("Each device ends with all M rows of its own N/8 columns, the columns of w it holds: "
            f"out_specs=P(None, {AXIS!r}) with the axis taken from the mesh.")
    if got.sharding.is_equivalent_to(rows, 2):
        hint = ("The result is split by rows, as x is: that is what passing w's columns round the ring gives, "
                "each device computing its own rows of x against every block of w. The lesson keeps w in place "
                "and moves x, so each device ends with its columns of all the rows. " + hint)
    assert_sharding(got, NamedSharding(_mesh(), P(None, AXIS)), name=name, hint=hint)


@pytest.mark.judge
@pytest.mark.points(1)
def test_only_collective_permutes(submission: ModuleType, submission_path: Path, rng: np.random.Generator) -> None:
    """The compiled program moves data with collective-permutes only."""
    case, _ = _fixed(submission, submission_path, rng)
    m, k, _ = FIXED
    why = {"all-gather": f"An all-gather hands every device all of x ({m}, {k}) before any multiplying starts; "
                         "the point is to multiply one chunk while the next one travels.",
           "all-reduce": "An all-reduce (a `psum`, or a matmul over a split dimension) adds whole buffers across "
                         "devices: every device sends and receives far more than the 7 chunks it needs, and "
                         "nothing overlaps.",
           "reduce-scatter": "A reduce-scatter adds pieces across devices; nothing here needs adding.",
           "all-to-all": "An all-to-all reshards an array between every pair of devices, not neighbours."}
    found = hlo_collective_shapes(case.hlo)
    for op in found:
        if op.op in why:
            fail(f"the compiled `ag_matmul` runs {'an' if op.op[0] == 'a' else 'a'} {op.op} of {op.text()}. "
                 f"{why[op.op]} Move x's chunks with `lax.ppermute` only.")
    if not found:
        fail("the compiled `ag_matmul` moves no data between devices (no collective-permute), yet each device "
             "needs every row of x.")


def _at(line: int | None) -> str:
    """' at line N' when the learner's line is known."""
    return f" at line {line}" if line else ""


def _ppermutes(case: Traced, path: Path) -> list[Collective]:
    """The learner's ppermute calls (a pytree call merged into one), failing when there are none."""
    found = jaxpr_collectives(live_jaxpr(case.jaxpr), path=path)  # a last shift nothing reads is not sent
    permutes = by_call(c for c in found if c.primitive == "ppermute")
    if not permutes:
        others = sorted({c.lax_name for c in found})
        fail("`ag_matmul` makes no `lax.ppermute`" + (f" (it uses {', '.join(others)})" if others else "")
             + ": the chunks of x travel round the ring with `lax.ppermute(chunk, axis, perm)`.")
    return permutes


@pytest.mark.judge
@pytest.mark.points(2)
def test_ring_permutes(submission: ModuleType, submission_path: Path, rng: np.random.Generator) -> None:
    """Every ppermute is a full ±1 shift of at most one (M/8, K) chunk, and each device receives 7 chunks in all."""
    case, _ = _fixed(submission, submission_path, rng)
    m, k, _ = FIXED
    chunk = m // DEVICES * k
    permutes = _ppermutes(case, submission_path)
    for c in permutes:
        at = _at(c.line)
        if c.times is None and c.enclosing == "cond":
            fail(f"the ppermute{at} sits inside a `lax.cond`, so whether it runs is decided while the program runs "
                 "and its transfers cannot be counted or scheduled ahead. Multiply the device's own chunk before "
                 f"the loop, then loop {DEVICES - 1} times: shift, multiply, write.")
        if c.times is None:
            fail(f"the ppermute{at} sits inside a `{c.enclosing}`, so how many chunks it sends is not fixed "
                 "when the program is built, and XLA cannot schedule the transfers against the matmuls. Loop "
                 f"with constant bounds: a Python `for`, `lax.fori_loop(0, {DEVICES - 1}, ...)` or `lax.scan`.")
        gap = c.missing_pairs(DEVICES)
        if gap is not None:
            pairs = ", ".join(f"{s}→{d}" for s, d in gap[1])
            fail(f"the ppermute{at} has no pair {pairs}: a device no pair sends to receives zeros (JAX fills "
                 f"them in), so its rows of x never go round. Close the ring: [(i, (i + 1) % {DEVICES}) for i in "
                 f"range({DEVICES})].")
        if c.shift(DEVICES) not in (1, DEVICES - 1):
            fail(f"the ppermute{at} sends {', '.join(f'{s}→{d}' for s, d in (c.perm or ())[:4])}: not every "
                 "device to one neighbour. A ring sends i → (i ± 1) % 8, so each link carries one chunk a step.")
        if c.elements > chunk:
            riders = (f" It is given {c.leaves} arrays at once, and `lax.ppermute` of a tuple sends every leaf; "
                      "which chunk arrives at each step is arithmetic on `lax.axis_index` and the step, the same "
                      "on every device." if c.leaves > 1 else "")
            fail(f"the ppermute{at} moves {c.elements} numbers ({', '.join(map(str, c.shapes))}) per device per "
                 f"step, more than one chunk of x: ({m // DEVICES}, {k}) = {chunk}. Only the chunk just multiplied "
                 f"needs to travel; sending a whole buffer moves up to 8 times as much for the same result.{riders}")
    w_block = (k, FIXED[2] // DEVICES)
    if any(w_block in c.shapes for c in permutes):
        c = next(c for c in permutes if w_block in c.shapes)
        fail(f"the ppermute{_at(c.line)} moves a {w_block} block: w's columns travel, and x stays put. Then each "
             "device can only finish its own rows of the result; keep w's columns where they are and pass x's "
             f"({m // DEVICES}, {k}) chunks round the ring, so each device finishes its columns of every row.")
    received = sum(c.elements * (c.times or 0) for c in permutes)
    if received != (DEVICES - 1) * chunk:
        extra = (" The 8th transfer brings a chunk back to the device it started on, whose product is already "
                 "written." if received == DEVICES * chunk else "")
        fail(f"each device receives {received / chunk:g} chunks of x in all (counting each loop body as many times "
             f"as it runs), expected {DEVICES - 1}: its own chunk is there already and each of the 7 others arrives "
             f"once.{extra}")


@pytest.mark.judge
@pytest.mark.points(2)
def test_chunk_matmuls(submission: ModuleType, submission_path: Path, rng: np.random.Generator) -> None:
    """No matmul does more than one chunk's work, (M/8, K) @ (K, N/8), and there are 8 chunks' worth in all."""
    case, _ = _fixed(submission, submission_path, rng)
    m, k, n = FIXED
    one = 2 * (m // DEVICES) * k * (n // DEVICES)
    found = matmuls_in(live_jaxpr(case.jaxpr), path=submission_path)
    total = 0
    for mm in found:
        at = f" ({line_text(mm.line, submission_path)})"
        if mm.flops > one:
            fail(f"`ag_matmul` computes {mm.describe()}{at}: {mm.flops // one} chunks' work in one matmul. It "
                 "cannot start until all of x has arrived, so nothing overlaps the transfers; multiply each "
                 f"({m // DEVICES}, {k}) chunk by the device's columns of w as soon as the device holds it.")
        if mm.times is None:
            fail(f"the matmul{at} sits {mm.unknown or 'in a loop of unknown length'}: how many chunks it "
                 "multiplies is not fixed when the program is built. Loop with constant bounds.")
        total += mm.total_flops or 0
    if total != DEVICES * one:
        fail(f"`ag_matmul` multiplies {total / one:g} chunks' worth, (M/8, K) @ (K, N/8) each, counting loop "
             f"bodies as many times as they run; expected {DEVICES}: the device's own chunk and the 7 that arrive, "
             "each once.")

