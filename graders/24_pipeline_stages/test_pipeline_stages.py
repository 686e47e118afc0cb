"""Grader for `pipeline_stages`: a GPipe forward pass whose values are right on every device, whose weights never
move, and whose activations step one stage right per step with `ppermute`, M + S - 1 steps of (B, D) matmuls."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import jax
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from course.grading import (
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
    matmuls_in,
    shard_mismatches,
    sharding_text,
    total_steps,
    traced_once,
)

AXIS = "stage"
# (S, M, B, D): S = 4 on the first 4 devices with more microbatches than stages and with fewer, and S = 8.
# B != D and no two of an activation, a layer, all layers and the outputs have the same number of elements.
CASES = ((4, 6, 5, 16), (4, 2, 3, 8), (8, 8, 4, 8))
FIXED = CASES[0]


def _mesh(stages: int) -> jax.sharding.Mesh:
    """A 1-D Explicit mesh named 'stage' over the first `stages` devices."""
    return jax.make_mesh((stages,), (AXIS,), axis_types=(AxisType.Explicit,), devices=jax.devices()[:stages])


def _host(rng: np.random.Generator, s: int, m: int, b: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """float32 microbatches and layers scaled so every tanh stays away from saturation."""
    x = rng.standard_normal((m, b, d)).astype(np.float32)
    w = (rng.standard_normal((s, d, d)) * (1.2 / np.sqrt(d))).astype(np.float32)
    return x, w


def _chain(x: np.ndarray, layers: np.ndarray) -> np.ndarray:
    """tanh(... tanh(x @ layers[0]) ... @ layers[-1]) in float64, over the leading microbatch axis too."""
    h = x.astype(np.float64)
    for w in layers:
        h = np.tanh(h @ w.astype(np.float64))
    return h


def _run(sub: ModuleType, path: Path, rng: np.random.Generator,
         case: tuple[int, int, int, int]) -> tuple[Traced, jax.Array, np.ndarray, np.ndarray]:
    """`pipeline(x, weights, mesh)` for one case, traced, compiled and run once; (case, result, x, weights).

    Each check traces `pipeline` anew (a new lambda for JAX); the compile itself is shared by its lowered text.
    """
    s, m, b, d = case
    xs, ws = _host(rng, s, m, b, d)
    mesh = _mesh(s)
    x = jax.device_put(xs, NamedSharding(mesh, P()))
    w = jax.device_put(ws, NamedSharding(mesh, P(AXIS)))
    traced = traced_once(sub.pipeline, x, w, static=(mesh,), name="`pipeline`", path=path)
    return traced, assert_is_array(traced.out, "`pipeline(x, weights, mesh)`"), xs, ws


def _call(sub: ModuleType, rng: np.random.Generator,
          case: tuple[int, int, int, int]) -> tuple[jax.Array, np.ndarray, np.ndarray]:
    """`pipeline(x, weights, mesh)` for one case, run under `jax.jit` (in the judge: jitted and run beside
    their code); (result, x, weights)."""
    s, m, b, d = case
    xs, ws = _host(rng, s, m, b, d)
    mesh = _mesh(s)
    x = jax.device_put(xs, NamedSharding(mesh, P()))
    w = jax.device_put(ws, NamedSharding(mesh, P(AXIS)))
    return assert_is_array(call_jitted(sub.pipeline, x, w, mesh), "`pipeline(x, weights, mesh)`"), xs, ws


@pytest.mark.judge
@pytest.mark.points(1)
def test_traceable(submission: ModuleType, submission_path: Path, rng: np.random.Generator) -> None:
    """`pipeline` can be traced and compiled (under `jax.jit`) and returns one array."""
    _run(submission, submission_path, rng, FIXED)


@pytest.mark.judge
@pytest.mark.points(3)
def test_values(submission: ModuleType, rng: np.random.Generator) -> None:
    """Every device holds out[m] = the S layers applied in order to microbatch m, for S = 4 and 8, M >= S and M < S."""
    for case in CASES:
        s, m, b, d = case
        got, xs, ws = _call(submission, rng, case)
        name = f"`pipeline(x, weights, mesh)` for S = {s} stages and M = {m} microbatches of ({b}, {d})"
        assert_dtype(got, np.float32, name)
        want = _chain(xs, ws)
        if got.shape != want.shape:
            fail(f"{name} has shape {got.shape}, expected x's shape {want.shape}.")
        bad = shard_mismatches(got, want, rtol=1e-4, atol=1e-5)
        if bad:
            where = ("every device" if len(bad) == s else
                     ", ".join(f"device {w.device}" for w in bad[:4]) + (" and more" if len(bad) > 4 else ""))
            fail(f"{name} is wrong on {where}. {_why(got, xs, ws, want)}")


def _blocks(got: jax.Array) -> list[np.ndarray]:
    """The block each device holds, in device order."""
    shards = sorted(got.addressable_shards, key=lambda sh: sh.device.id)
    return [np.asarray(sh.data).astype(np.float64) for sh in shards]


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal up to float32 rounding through a few layers."""
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=1e-4, atol=1e-5))


def _why(got: jax.Array, xs: np.ndarray, ws: np.ndarray, want: np.ndarray) -> str:
    """What the wrong values look like: devices apart, zeros at the end, layers reversed or missing, shifted."""
    blocks = _blocks(got)
    first = blocks[0]
    if first.shape != want.shape:
        return "Each device holds only a piece; every device should hold all M outputs, replicated."
    if not all(_close(blk, first) for blk in blocks[1:]):
        return ("The devices hold different outputs while the result claims to be replicated (P()): only the "
                "last stage finishes microbatches. Collect them with a psum of a buffer that the last stage "
                "fills and every other stage leaves at zero.")
    stages, micro = len(ws), len(xs)
    wrong = [m for m in range(micro) if not _close(first[m], want[m])]
    if len(wrong) == micro:
        listed = f"All {micro} outputs are wrong."
    else:
        many = len(wrong) > 1
        listed = (f"Output{'s' if many else ''} {', '.join(map(str, wrong))} (of 0..{micro - 1}) "
                  f"{'are' if many else 'is'} wrong.")
    for guess in (_zeros_at_end, _layers_off, _shifted, _unmasked):
        said = guess(first, xs, ws, want, wrong)
        if said:
            return f"{listed} {said}"
    return (f"{listed} At step t stage 0 takes microbatch t, every stage applies its own layer to what it "
            f"holds and passes the result right, and the last stage finishes microbatch t - {stages - 1}.")


def _zeros_at_end(first: np.ndarray, xs: np.ndarray, ws: np.ndarray, want: np.ndarray, wrong: list[int]) -> str:
    """The last microbatches left at zero: the loop stopped before they left the last stage, or they were not kept."""
    micro, stages = len(xs), len(ws)
    if wrong != list(range(micro - len(wrong), micro)) or not np.allclose(first[wrong], 0.0):
        return ""
    k = len(wrong)
    what = "The last output is" if k == 1 else f"The last {k} outputs are"
    # Which of the two it is shows in the program (how many steps it makes), which the judge does not see.
    return (f"{what} all zeros: either the loop stopped {k} step{'s' if k > 1 else ''} before microbatch "
            f"{micro - 1} left the last stage, or the activation{'s' if k > 1 else ''} reached the last stage but "
            "never went into the buffer the outputs are collected from. Microbatch M - 1 enters at step M - 1 and "
            f"needs S - 1 more steps to cross the pipe: M + S - 1 = {micro + stages - 1} steps in all, S - 1 = "
            f"{stages - 1} of them bubble; microbatch t - (S - 1) leaves the last stage at step t, so write it there "
            "at every step from S - 1 to M + S - 2 (is the write guarded by a bound that stops short, or indexed "
            "by the wrong step?).")


def _layers_off(first: np.ndarray, xs: np.ndarray, ws: np.ndarray, want: np.ndarray, wrong: list[int]) -> str:
    """Every output went through the layers in reverse, or through a run of them only."""
    stages = len(ws)
    if _close(first, _chain(xs, ws[::-1])):
        return (f"Each output went through the layers in reverse order, W{stages - 1} first: stage s holds "
                "weights[s] and microbatches enter at stage 0, so activations move from stage s to s + 1.")
    for lo in range(stages):
        for hi in range(lo + 1, stages + 1):
            if (lo, hi) != (0, stages) and _close(first, _chain(xs, ws[lo:hi])):
                missing = [i for i in range(stages) if not lo <= i < hi]
                return (f"Each output went through layers {lo}..{hi - 1} only: layer"
                        f"{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))} never acted on it. "
                        "Take the outputs from the last stage, after the activation has crossed all S stages.")
    return ""


def _shifted(first: np.ndarray, xs: np.ndarray, ws: np.ndarray, want: np.ndarray, wrong: list[int]) -> str:
    """Output m holds another microbatch's result: stage 0 fed them at the wrong step."""
    micro = len(xs)
    for k in (1, -1, 2, -2):
        pairs = [(m, m + k) for m in range(micro) if 0 <= m + k < micro]
        if pairs and all(_close(first[m], want[n]) for m, n in pairs):
            when = "early" if k > 0 else "late"
            return (f"Output m holds microbatch m {'+' if k > 0 else '-'} {abs(k)}'s result: microbatches were fed "
                    f"{abs(k)} step{'s' if abs(k) > 1 else ''} {when}, or collected at the wrong step. Stage 0 "
                    "takes microbatch t at step t, and microbatch t - (S - 1) leaves the last stage then.")
    return ""


def _unmasked(first: np.ndarray, xs: np.ndarray, ws: np.ndarray, want: np.ndarray, wrong: list[int]) -> str:
    """Every stage's output added up: the psum collected the half-done activations of the other stages too."""
    micro, stages = len(xs), len(ws)
    full = range(micro - stages + 1)  # outputs whose every term is a real microbatch
    if not full:
        return ""
    summed = [sum(_chain(xs[m + stages - 1 - s], ws[:s + 1]) for s in range(stages)) for m in full]
    if not all(_close(first[m], summed[m]) for m in full):
        return ""
    return ("Each output is the sum of what all S stages held at that step: every stage wrote its own activation "
            "into the buffer the psum collects. Only the last stage's result is an output; the other stages "
            "must add zeros (`jnp.where(me == S - 1, out, 0)`).")


@pytest.mark.judge
@pytest.mark.points(1)
def test_output_replicated(submission: ModuleType, rng: np.random.Generator) -> None:
    """The (M, B, D) result is replicated: every device holds all of it (P())."""
    got, xs, _ = _call(submission, rng, FIXED)
    if got.shape != xs.shape:
        fail(f"`pipeline(...)` has shape {got.shape} and sharding {sharding_text(got)}, expected x's shape "
             f"{xs.shape}, replicated (P()).")
    assert_sharding(got, NamedSharding(_mesh(FIXED[0]), P()), name="`pipeline(x, weights, mesh)`",
                    hint="Only the last stage finishes microbatches; a psum over 'stage' of its output buffer "
                         "(zeros elsewhere) puts every output on every device, out_specs=P().")


def _what(elements: int) -> str:
    """Which array of the fixed case has this many elements per device."""
    s, m, b, d = FIXED
    names = {b * d: "one (B, D) activation", d * d: "one layer's weights", s * d * d: "all S layers' weights",
             m * b * d: "the (M, B, D) outputs"}
    return names.get(elements, f"{elements} numbers")


@pytest.mark.judge
@pytest.mark.points(2)
def test_weights_stay(submission: ModuleType, submission_path: Path, rng: np.random.Generator) -> None:
    """Weights never move: no collective of a layer's size, no all-to-all, one collective besides the permutes."""
    traced, _, _, _ = _run(submission, submission_path, rng, FIXED)
    s, m, b, d = FIXED
    ops = hlo_collective_shapes(traced.hlo)
    for op in ops:
        if op.elements in (d * d, s * d * d) or op.op == "all-to-all":
            article = "an" if op.op[0] in "aeiou" else "a"
            fail(f"the compiled `pipeline` runs {article} {op.op} of {op.text()} ({_what(op.elements)}). In a pipeline "
                 "each stage keeps its own layer: weights[s] stays on device s, and only (B, D) activations "
                 "travel, one stage per step. Gathering the weights makes every device hold and apply all "
                 "S layers, which is no pipeline at all.")
    others = [op for op in ops if op.op != "collective-permute"]
    if len(others) > 1:
        listed = ", ".join(f"{op.op} of {op.text()} ({_what(op.elements)})" for op in others)
        fail(f"the compiled `pipeline` runs {len(others)} collectives besides the permutes: {listed}. Activations "
             "move by ppermute; the only other collective the pipeline needs collects the outputs once, at "
             "the end (a psum of the last stage's buffer).")


def _permutes(sub: ModuleType, path: Path, rng: np.random.Generator) -> list[Collective]:
    """The fixed case's `lax.ppermute` calls (a call given a pytree counted once, with all its leaves)."""
    traced, _, _, _ = _run(sub, path, rng, FIXED)
    found = jaxpr_collectives(traced.jaxpr, path=path)
    permutes = by_call(c for c in found if c.primitive == "ppermute")
    if not permutes:
        used = sorted({c.lax_name for c in found})
        fail("`pipeline` makes no `lax.ppermute`" + (f" (it uses {', '.join(used)})" if used else "")
             + ": in a pipeline each stage passes its activation to the next with `lax.ppermute`.")
    return permutes


@pytest.mark.judge
@pytest.mark.points(2)
def test_permute_steps(submission: ModuleType, submission_path: Path, rng: np.random.Generator) -> None:
    """The ppermutes make M + S - 2 or M + S - 1 steps, each of one (B, D) activation."""
    permutes = _permutes(submission, submission_path, rng)
    s, m, b, d = FIXED
    for c in permutes:
        if c.elements != b * d:
            leaves = f" (it is given {c.leaves} arrays at once)" if c.leaves > 1 else ""
            fail(f"the ppermute at {line_text(c.line, submission_path)} moves {c.elements} numbers per device "
                 f"per step ({_what(c.elements)}){leaves}; a pipeline step passes one (B, D) = {(b, d)} "
                 "activation to the next stage, nothing else.")
    steps = total_steps(permutes)
    if steps is None:
        c = next(c for c in permutes if c.times is None)
        fail(f"the ppermute at {line_text(c.line, submission_path)} sits inside a `{c.enclosing}`, so its steps "
             "cannot be counted when the program is built. Loop a fixed M + S - 1 times: a Python `for`, a "
             "`lax.fori_loop` with constant bounds, or a `lax.scan`.")
    if steps not in (m + s - 2, m + s - 1):
        hint = {m * (s - 1): " That is one microbatch at a time, through all stages, before the next enters: "
                             "S - 1 steps each, with no overlap.",
                m * s: " That is one microbatch at a time, through all stages, before the next enters."}.get(steps)
        if hint is None:
            hint = (" That is fewer steps than the pipe needs: the last microbatch never reaches the last stage."
                    if steps < m + s - 2 else
                    " The extra steps drain an empty pipe: once the last microbatch leaves the last stage, stop.")
        fail(f"`pipeline` makes {steps} ppermute steps for S = {s} stages and M = {m} microbatches (each loop body "
             f"counted as many times as it runs); GPipe takes M + S - 1 = {m + s - 1} steps, and the last one "
             f"passes nothing on, so {m + s - 2} or {m + s - 1} ppermutes.{hint}")


@pytest.mark.judge
@pytest.mark.points(1)
def test_permute_direction(submission: ModuleType, submission_path: Path, rng: np.random.Generator) -> None:
    """Every ppermute sends stage s to stage s + 1 (the wrap pair from the last stage to the first allowed)."""
    s = FIXED[0]
    for c in _permutes(submission, submission_path, rng):
        offset = c.chain_offset(s)
        if offset == 1:
            continue
        pairs = ", ".join(f"{a}→{b}" for a, b in (c.perm or ()))
        why = ("it sends activations left, towards stage 0, while layer s + 1 sits on the right"
               if offset == -1 else "that is not every stage sending to the next one")
        fail(f"the ppermute at {line_text(c.line, submission_path)} uses the pairs {pairs}: {why}. A pipeline "
             f"passes stage s's output to stage s + 1: perm [(s, s + 1) for s in range({s - 1})] (the pair "
             f"{s - 1}→0 may be added).")


@pytest.mark.judge
@pytest.mark.points(1)
def test_matmul_work(submission: ModuleType, submission_path: Path, rng: np.random.Generator) -> None:
    """Each matmul is one (B, D) @ (D, D) product, and each device makes between M and M + S - 1 of them."""
    traced, _, _, _ = _run(submission, submission_path, rng, FIXED)
    s, m, b, d = FIXED
    unit = 2 * b * d * d
    found = matmuls_in(traced.jaxpr, path=submission_path)
    for mm in found:
        if mm.flops > unit:
            fail(f"`pipeline` computes {mm.describe()} at {line_text(mm.line, submission_path)}: "
                 f"{mm.flops // unit} microbatch-layer products in one. A stage applies its one layer to one "
                 f"(B, D) = {(b, d)} activation per step, (B, D) @ (D, D); several microbatches or layers at once "
                 "mean a device is doing work that belongs to other stages or other steps.")
    unknown = next((mm for mm in found if mm.at_most is None), None)
    if unknown is not None:
        fail(f"the matmul at {line_text(unknown.line, submission_path)} runs {unknown.unknown}, so its count "
             "cannot be known when the program is built; loop a fixed M + S - 1 times.")
    # A matmul under a `cond` (a stage skipping its bubble steps) counts as if always taken: an upper bound.
    most = sum(mm.flops * (mm.at_most or 0) for mm in found) / unit
    least = sum(mm.total_flops or 0 for mm in found) / unit
    if most > m + s - 1 or (least == most and least < m):
        fail(f"each device computes {most:g} (B, D) @ (D, D) products for S = {s} stages and M = {m} "
             f"microbatches; a GPipe stage makes one per step, M + S - 1 = {m + s - 1} at most (its own layer "
             f"on every microbatch, M = {m}, at least).")
