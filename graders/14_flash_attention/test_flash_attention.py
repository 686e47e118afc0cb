"""Grader for `flash_attention`: values under the strict TPU interpreter; how the kernel streams KV and keeps state.

Values run under the strict TPU interpreter with the learner's function jitted once per shape, so
the three float32 data sets share one compile. The structural checks trace `attention` with
`make_jaxpr` only: blocks and axes from the index maps (`grid_info`), the softmax state from a
taint pass (`taint_pass`), and where the output is divided from a shadow run of the kernel over its
grid (`trace_kernel`), which executes nothing but integer arithmetic.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from course.grading import (
    CheckFailed,
    GridInfo,
    KernelCall,
    TraceUnsupported,
    assert_dtype,
    assert_is_array,
    assert_shape,
    callback_error,
    check,
    fail,
    grid_info,
    jitted_once,
    kernel_flow,
    learner_frames,
    learner_line,
    pallas_calls,
    quote_line,
    store_dtypes,
    strict_values,
    taint_pass,
    tile_problem,
    tpu_fallback,
    trace_kernel,
    traced,
    unwritten_tail,
    vmem_bytes,
    walk_eqns,
    work_outside,
)

F32, BF16 = np.dtype(jnp.float32), np.dtype(jnp.bfloat16)
VALUES_F32 = (256, 2048, 64)  # S, T, D: 16 KV blocks of 128, or 2 of 1024
VALUES_BF16 = (128, 2048, 128)
VALUES_3X128 = (384, 384, 64)  # S = T = 3 x 128: a query or key tile of 256 leaves rows or keys out
LARGEST = 16384  # the task's largest S and T: where blocks that reach the chip's speed are chosen
BIG = (LARGEST, LARGEST)  # S = T where a score matrix would be 2**28 elements
# Shapes the structural checks trace (make_jaxpr only): the largest in both dtypes, and the value shapes.
SHAPES = ((*BIG, 128, F32), (*BIG, 128, BF16), (*VALUES_F32, F32), (*VALUES_BF16, BF16))
# The default scoped VMEM of a v5e core; a working set must stay under it. Besides its blocks (each twice, for the
# pipeline) and scratch, an attention kernel holds its (bq, bk) scores and their exponentials, float32 both: so
# counted, every block size that fits compiled on a v5e (S = T = 16384, D = 128), and (2048, 1024) in bfloat16 and
# (1024, 2048) in float32, which do not fit, did not (the lesson's table).
VMEM_BUDGET = 16 * 2**20
SCORE_TILES = 2
TOL_F32 = {"rtol": 1e-4, "atol": 1e-4}
TOL_LARGE = {"rtol": 1e-3, "atol": 1e-3}  # softmax of logits near 150 is one-hot to float32 precision
TOL_BF16 = {"rtol": 2e-2, "atol": 1e-2}
OUTSIDE = frozenset({"dot_general", "exp", "exp2", "reduce_max", "logistic"})


def _reference(q: jax.Array, k: jax.Array, v: jax.Array) -> np.ndarray:
    """softmax(q k^T / sqrt(D)) v in float64, from the inputs' own values."""
    q64, k64, v64 = (np.asarray(a, np.float64) for a in (q, k, v))
    s = q64 @ k64.T / math.sqrt(q.shape[1])
    p = np.exp(s - s.max(axis=1, keepdims=True))
    return (p / p.sum(axis=1, keepdims=True)) @ v64


def _specs(s: int, t: int, d: int, dtype: np.dtype) -> tuple[jax.ShapeDtypeStruct, ...]:
    """Abstract q, k and v, for tracing only."""
    return (jax.ShapeDtypeStruct((s, d), dtype), jax.ShapeDtypeStruct((t, d), dtype),
            jax.ShapeDtypeStruct((t, d), dtype))


def _name(s: int, t: int, d: int, dtype: np.dtype) -> str:
    """How a message names a call."""
    return f"`attention(q, k, v)` for {dtype.name} S = {s}, T = {t}, D = {d}"


@contextlib.contextmanager
def _stores_explained(path: Path, dtype: np.dtype) -> Iterator[None]:
    """A store that Pallas refuses while tracing because the ref has another dtype than the value (float32 state
    kept in a ref made in bfloat16), failed as that mistake rather than as JAX's error."""
    try:
        yield
    except Exception as exc:
        found = store_dtypes(exc)
        if found is None:
            raise
        frames = learner_frames(exc.__traceback__, path)
        where = (quote_line(path, frames[-1].lineno) if frames else "") or "a store in your kernel"
        ref, value = found
        fail(f"for {dtype.name} inputs, {where} stores a {value} value into a {ref} ref, which Pallas refuses "
             f"(`Invalid dtype for swap`): the ref was made in the inputs' dtype. The softmax state (m, l and acc) "
             "belongs in float32 VMEM scratch whatever the inputs' dtype, and the output gets acc / l once, cast at "
             "the last KV step (`.astype(o_ref.dtype)`).")


def _call(submission: ModuleType, path: Path, s: int, t: int, d: int, dtype: np.dtype) -> KernelCall:
    """The one `pallas_call` that `attention` makes for these shapes (traced, never run)."""
    with _stores_explained(path, dtype):
        calls = tpu_fallback(lambda: pallas_calls(submission.attention, *_specs(s, t, d, dtype), path=path))
    check(calls, "`attention` makes no `pl.pallas_call`: the attention belongs in a kernel.")
    check(len(calls) == 1, f"`attention` makes {len(calls)} `pallas_call`s; make one.")
    call = calls[0]
    check(call.num_inputs == 3 and call.num_outputs == 1,
          f"the `pallas_call` takes {call.num_inputs} input(s) and makes {call.num_outputs} output(s): it "
          "takes q, k and v, each in blocks, and makes the attention output.")
    return call


def _kv_axis(info: GridInfo) -> int | None:
    """The grid axis that walks k's rows (None when none or several do)."""
    axes = info.inputs()[1].axes_moving(0)
    return next(iter(axes)) if len(axes) == 1 else None


def _run(submission: ModuleType, path: Path, q: jax.Array, k: jax.Array, v: jax.Array) -> Any:
    """The learner's `attention` under the strict interpreter, jitted once per shape and dtype."""
    fn = jitted_once(submission.attention, ("attention", q.shape, k.shape, q.dtype))
    try:
        with _stores_explained(path, np.dtype(q.dtype)):
            return strict_values(fn, q, k, v)
    except CheckFailed:
        raise
    except Exception as exc:
        inner = callback_error(exc)
        if inner is None:
            raise
        if "Revisited block" in inner:
            fail(f"the strict TPU interpreter refused your grid: {inner} An output block is written back "
                 "when the grid moves to another one, and is not brought back: a query block's KV "
                 "steps must run one after another, so the KV axis must be the last grid axis.")
        fail(f"the strict TPU interpreter stopped your kernel: {inner}")


def _draw(rng: np.random.Generator, s: int, t: int, d: int, dtype: np.dtype) -> tuple[np.ndarray, ...]:
    """Random normal q, k, v (as float32 NumPy arrays)."""
    return tuple(rng.standard_normal(shape).astype(np.float32) for shape in ((s, d), (t, d), (t, d)))


def _online(q: np.ndarray, k: np.ndarray, v: np.ndarray, bk: int, mistake: str) -> np.ndarray:
    """The online softmax over KV blocks of `bk`, in float64, with one usual mistake built in."""
    s_all = q @ k.T / math.sqrt(q.shape[1])
    m = np.full((q.shape[0], 1), -np.inf)
    total, acc = np.zeros_like(m), np.zeros((q.shape[0], v.shape[1]))
    for start in range(0, k.shape[0], bk):
        s = s_all[:, start:start + bk]
        if mistake == "last_block_only":
            m, total, acc = np.full_like(m, -np.inf), np.zeros_like(total), np.zeros_like(acc)
        m_new = np.maximum(m, s.max(axis=1, keepdims=True))
        alpha, p = np.exp(m - m_new), np.exp(s - m_new)
        total = (1 if mistake == "no_l_rescale" else alpha) * total + p.sum(axis=1, keepdims=True)
        pv = p @ v[start:start + bk]
        if mistake == "local_normalize":
            pv = pv / p.sum(axis=1, keepdims=True)
        acc = (1 if mistake == "no_acc_rescale" else alpha) * acc + pv
        m = m_new
    return acc if mistake == "local_normalize" else acc / total


MISTAKES = {
    "no_acc_rescale": "The result is what an online softmax gives that rescales l but not acc: when a block "
                      "raises the running max from m_old to m_new, acc must shrink by alpha = exp(m_old - m_new) "
                      "too (acc = alpha * acc + p @ v).",
    "no_l_rescale": "The result is what an online softmax gives that rescales acc but not l: the running sum "
                    "must shrink by alpha too (l = alpha * l + rowsum(p)).",
    "last_block_only": "The result is the softmax over the last KV block alone: the state does not carry from "
                       "one KV step to the next. Set m, l and acc only at the first KV step "
                       "(`pl.when(kv == 0)`), and store m_new into m at every step.",
    "local_normalize": "The result is what you get when each block's p @ v is divided by that block's own row "
                       "sum: blocks are then weighted equally, however large their scores. Keep acc "
                       "unnormalized and divide by the running l once, at the end.",
}


def _mistake(arrays: tuple[np.ndarray, ...], got: np.ndarray, bk: int, tol: dict[str, float]) -> str | None:
    """The usual mistake whose result `got` matches, in words, or None."""
    q, k, v = (np.asarray(a, np.float64) for a in arrays)
    with np.errstate(all="ignore"):
        for mistake, words in MISTAKES.items():
            if np.allclose(got, _online(q, k, v, bk, mistake), **tol):
                return words
    return None


def _coverage(info: GridInfo) -> str | None:
    """When the grid's blocks fall short of the rows of q or the keys, or walk past them: which, in words."""
    q_block, k_block = info.inputs()[:2]
    for block, axis, what, letter in ((q_block, 0, "query rows", "S"), (k_block, 1, "keys", "T")):
        if axis >= len(info.grid) or not block.axes_moving(0) <= {axis}:
            continue  # the grid check names a grid of another form
        tile, size = block.block_dims[0], block.array_shape[0]
        covered = tile * (info.grid[axis] if block.axes_moving(0) else 1)  # a grid axis of 1 step moves nothing
        if covered < size and size % tile:
            return (f"your grid reaches {what} 0 to {covered - 1} of {size} only: a tile of {tile} does not divide "
                    f"{letter} = {size} ({size // 128} x 128 here), and {letter} // {tile} drops the rest. Pick "
                    f"tiles that divide S and T (128 divides every size the task allows).")
        if covered < size:
            name, lam = ("k", "lambda i, j: (j, 0)") if axis else ("q", "lambda i, j: (i, 0)")
            why = (f"grid axis {axis} has {info.grid[axis]} step(s) for blocks of {tile}, where {letter} = {size} "
                   f"holds {size // tile}" if block.axes_moving(0) or info.grid[axis] == 1 else
                   f"the {name} block never moves, though grid axis {axis} has {info.grid[axis]} steps: its index "
                   f"map does not follow that axis")
            return (f"your grid reaches {what} 0 to {covered - 1} of {size} only: {why}. The grid is (S // bq, "
                    f"T // bk), and the {name} block follows grid axis {axis} ({lam}).")
        if covered > size:
            return (f"your grid walks the {what} in {info.grid[axis]} blocks of {tile}, {covered} in all, past "
                    f"{letter} = {size} ({size // 128} x 128 here): the last block reaches beyond the end, where "
                    "memory holds garbage (NaN under the strict TPU interpreter). Pick tiles that divide S and T.")
    return None


def _unwritten_rows(bad: np.ndarray) -> str | None:
    """From the values alone: the last query rows, and nothing else, were never written, as a grid of S // tile
    leaves them when one tile of 128 x k fits that count and does not divide S."""
    tail, size = unwritten_tail(bad, 0), bad.shape[0]
    if tail is None:
        return None
    edge, tiles = tail[0], " or ".join(map(str, tail[1]))
    return (f"your grid reaches query rows 0 to {edge - 1} of {size} only: a tile of {tiles} does not divide "
            f"S = {size} ({size // 128} x 128 here), and S // tile drops the rest (nothing writes those rows, "
            "which read as NaN). Pick tiles that divide S and T (128 divides every size the task allows).")


def _keys_past_the_end(bad: np.ndarray, t: int) -> str | None:
    """From the values alone: every output is NaN at a T no tile of 256 divides, as when the key blocks walk
    past T and every row's softmax takes in the garbage beyond it (the trace, where there is one, says
    exactly; a kernel that writes nothing at all looks the same, so both are said)."""
    if not bad.all() or t % 256 == 0:
        return None
    return (f"every output is NaN. At T = {t} ({t // 128} x 128 here) that is what a key tile that does not divide "
            f"T = {t} gives with a grid that rounds up: the last key block reaches past the end of k and v, where "
            "memory holds garbage (NaN under the strict TPU interpreter), and every row's softmax takes it in. "
            "Pick tiles that divide S and T (128 divides every size the task allows); if yours do, check that "
            "every output block is written.")


def _scale(arrays: tuple[np.ndarray, ...], got: np.ndarray, tol: dict[str, float]) -> str | None:
    """When `got` is the attention at another scale than 1/sqrt(D) (a D written in as a number): which one."""
    q, k, v = (np.asarray(a, np.float64) for a in arrays)
    d = q.shape[1]
    for other in (64, 128, 1, d * d):
        if other == d:
            continue
        if np.allclose(got, _reference(q * math.sqrt(d / other), k, v), **tol):
            what = {1: "no scale at all", d * d: "1/D"}.get(other, f"1/sqrt({other})")
            return (f"The result is the attention computed with {what} where the scale is 1/sqrt(D) = "
                    f"1/sqrt({d}): take D from the inputs (`q.shape[-1]`) rather than writing a number in.")
    return None


# How each usual mistake about the running max moves the exponent of a row's largest logit mx (scaled by
# 1/sqrt(D)) away from the 0 a right one gives, and what that mistake is, in words; those that depend on the data
# first, since they say more when several fit.
ROW_MISTAKES = {
    "no_max": (lambda mx, d: mx,
               "exp(s) is taken without the running max subtracted: it overflows to inf in a row whose logits pass "
               "88, and underflows to 0 for every key of a row whose logits all lie below -87 (l = 0, so acc / l is "
               "0 / 0). Subtract the running max before exponentiating: p = exp(s - m_new), alpha = exp(m_old - "
               "m_new)."),
    "from_zero": (lambda mx, d: np.minimum(mx, 0.0),
                  "a running max that starts at 0 stays 0 in a row whose logits all lie below -87, so exp(s - m) "
                  "underflows to 0 for all its keys, l stays 0, and acc / l is 0 / 0. Start m at -inf, so that the "
                  "first KV block sets it."),
    "other_scale": (lambda mx, d: mx * (1 - math.sqrt(d)),
                    "the running max is taken over other scores than those exponentiated (q k^T before its 1/sqrt(D) "
                    "scale, say, while exp takes the scaled scores): m then misses a row's largest score by a "
                    "factor of sqrt(D), so exp(s - m) underflows to 0 for every key of a row with large logits (l = "
                    "0, so acc / l is 0 / 0) and overflows in a row of very negative ones. Take m over the very "
                    "scores that p = exp(s - m) exponentiates."),
    "alpha_inverted": (lambda mx, d: np.full_like(mx, np.inf),
                       "the rescale factor is turned over, alpha = exp(m_new - m_old): at the first KV step m_old "
                       "is -inf, so alpha is inf, and inf x 0 (the empty l and acc) is NaN in every row. alpha = "
                       "exp(m_old - m_new) is at most 1: it shrinks what was summed under a smaller max."),
}
# exp of float32 overflows above 88.7 and underflows to 0 below -87.3 (or -103.9 with denormals): a row whose
# largest exponent lies clearly beyond those is NaN (inf / inf, or 0 / 0), and one clearly within them is not.
CLEARLY_BAD, CLEARLY_FINE = 110.0, 80.0


def _row_mistakes(arrays: tuple[Any, ...], got: np.ndarray, written: bool | None) -> str | None:
    """The usual running-max mistakes that leave exactly the rows NaN that are NaN here, in words, or None.
    `written`: whether the trace shows every row written (None: unknown, when only mistakes that depend on the
    data are tried; False: NaN from memory nothing wrote says nothing of the softmax, and none is)."""
    if written is False:
        return None
    q, k, _ = (np.asarray(a, np.float64) for a in arrays)
    d = q.shape[1]
    mx = (q @ k.T / math.sqrt(d)).max(axis=1)
    rows = (~np.isfinite(got)).any(axis=1)
    found = []
    for name, (rule, words) in ROW_MISTAKES.items():
        if name == "alpha_inverted" and not (written and np.isnan(got).all()):
            continue  # NaN everywhere whatever the data: only a kernel seen to write every row tells it apart
        exponent = np.abs(rule(mx, d))
        wrong, fine = exponent > CLEARLY_BAD, exponent < CLEARLY_FINE
        if wrong.any() and rows[wrong].all() and not rows[fine].any():
            found.append(words)
    if not found:
        return None
    if len(found) == 1:
        return f"Those are exactly the rows this mistake leaves NaN: {found[0]}"
    return "Several mistakes leave exactly these rows NaN. Either " + " Or ".join(found)


def _unset(call: KernelCall | None, path: Path) -> str | None:
    """The first scratch buffer or output block the kernel reads before anything set it, in words (`call` None:
    unknown)."""
    if call is None:
        return None
    try:
        trace = trace_kernel(call)
    except TraceUnsupported:
        return None
    reads = trace.unset_reads()
    if not reads:
        return None
    read = reads[0]
    return (f"{quote_line(path, read.line) or 'the kernel'} reads `{read.window.buffer.name}` at grid step "
            f"{read.step} before anything was written to it: scratch and output blocks start as whatever VMEM "
            "held (NaN under the strict TPU interpreter), and rescaling garbage by alpha = 0 leaves garbage (0 x NaN "
            "is NaN). Set the state at the first KV step, under `pl.when(kv == 0)`: m to -inf, l and acc to 0.")


def _rows_written(call: KernelCall | None) -> bool | None:
    """Whether the kernel's trace shows the output block written for every query block (None when unknown)."""
    if call is None:
        return None
    try:
        trace = trace_kernel(call)
    except TraceUnsupported:
        return None
    info = grid_info(call)
    q_axes = info.inputs()[0].axes_moving(0)
    writes = trace.accesses(trace.arg(call.num_index + call.num_inputs), "write", "update")
    if len(q_axes) != 1:
        return bool(writes) and not q_axes
    (axis,) = q_axes
    return {e.step[axis] for e in writes} == set(range(info.grid[axis]))


def _nan_words(arrays: tuple[Any, ...], got: np.ndarray, call: KernelCall | None, hint: str, path: Path) -> str:
    """Why the output is NaN or inf where it is: state read before it was set, a usual mistake about the running
    max that leaves exactly those rows NaN, rows never written, keys read past T, or else the check's hint."""
    bad = ~np.isfinite(got)
    share = f"{100 * bad.mean():.0f}% of the output is NaN or inf"
    unset = _unset(call, path)
    if unset:
        return f"{share}: {unset}"
    rows = _row_mistakes(arrays, got, _rows_written(call))
    if rows:
        return f"{share}. {rows}"
    return _unwritten_rows(bad) or _keys_past_the_end(bad, arrays[1].shape[0]) or f"{share}. {hint}"


def _check(submission: ModuleType, arrays: tuple[np.ndarray, ...], dtype: np.dtype, tol: dict[str, float],
           name: str, hint: str, path: Path) -> None:
    """Run, then compare with the float64 reference; a mismatch names the mistake when it can."""
    q, k, v = (jnp.asarray(a).astype(dtype) for a in arrays)
    got = assert_is_array(_run(submission, path, q, k, v), f"the result of {name}")
    assert_dtype(got, q.dtype, f"the result of {name}")
    assert_shape(got, q.shape, f"the result of {name}")
    values, want = np.asarray(got, np.float64), _reference(q, k, v)
    if np.allclose(values, want, **tol):
        return
    # The grid explains a wrong result (in a judge's check, read from the executor's trace), when there is one
    # kernel to read it from; the structural checks report it when there is not.
    try:
        call: KernelCall | None = _call(submission, path, q.shape[0], k.shape[0], q.shape[1], dtype)
    except CheckFailed:
        call = None
    info = None if call is None else grid_info(call)
    kv = None if info is None else _kv_axis(info)
    shuffled = "" if info is None or kv is None or info.semantic(kv) != "parallel" else (
        f" Your KV axis (grid axis {kv}) is marked 'parallel', so the strict interpreter runs its steps in a "
        "shuffled order, as a TPU's cores may: the step that resets the state does not come first, nor "
        "the one that writes the output last.")
    cover = None if info is None else _coverage(info)
    if cover:
        fail(f"{name}: {cover}{shuffled}")
    sizes = ([b for b in (1024, 512, 256, 128) if k.shape[0] % b == 0] if info is None
             else [info.inputs()[1].block_dims[0]])
    if not np.isfinite(values).all():
        fail(f"{name}: {_nan_words((q, k, v), values, call, hint, path)}{shuffled}")
    words = next(filter(None, (_mistake((q, k, v), values, bk, tol) for bk in sizes)), None) or _scale(
        (q, k, v), values, tol)
    err = np.abs(values - want)
    at = np.unravel_index(np.argmax(err), err.shape)
    fail(f"{name}: max error {err[at]:.3g} at {tuple(map(int, at))} (got {values[at]:.5f}, expected "
         f"{want[at]:.5f}). " + (words or "Check the online softmax: m_new = max(m, rowmax(s)), alpha = "
                                 "exp(m - m_new), l = alpha * l + rowsum(p), acc = alpha * acc + p @ v, and "
                                 "acc / l once at the end.") + shuffled)


@pytest.mark.judge
@pytest.mark.points(2)
def test_values_float32(submission: ModuleType, run_seed: int, submission_path: Path) -> None:
    """`attention` gives softmax(q k^T / sqrt(D)) v for random float32 q, k, v (S = 256, T = 2048, D = 64)"""
    arrays = _draw(np.random.default_rng([run_seed, 1]), *VALUES_F32, F32)
    _check(submission, arrays, F32, TOL_F32, _name(*VALUES_F32, F32),
           "Memory nothing was written to reads as NaN under the strict interpreter, and exp of a large "
           "logit is inf: is every output row written, and the running max subtracted?", submission_path)


@pytest.mark.judge
def test_values_large_logits(submission: ModuleType, run_seed: int, submission_path: Path) -> None:
    """Logits of 150 and more (q scaled by 50) give the right values: exp never overflows"""
    q, k, v = _draw(np.random.default_rng([run_seed, 2]), *VALUES_F32, F32)
    _check(submission, (q * 50, k, v), F32, TOL_LARGE, _name(*VALUES_F32, F32) + " with q scaled by 50",
           "Here the logits reach 150 and more, and exp(150) overflows float32: subtract the running max "
           "before exponentiating (p = exp(s - m_new), alpha = exp(m_old - m_new)), which keeps every "
           "exponent at or below 0.", submission_path)


@pytest.mark.judge
@pytest.mark.points(2)
def test_values_max_in_a_later_block(submission: ModuleType, run_seed: int, submission_path: Path) -> None:
    """When every query's largest logits sit in the last KV block, the earlier blocks are rescaled right"""
    q, k, v = _draw(np.random.default_rng([run_seed, 3]), *VALUES_F32, F32)
    q[:, 0] = np.abs(q[:, 0]) + 1
    k[-128:, 0] = 40.0
    _check(submission, (q, k, v), F32, TOL_F32, _name(*VALUES_F32, F32) + " with the largest logits in the last keys",
           "Memory nothing was written to reads as NaN under the strict interpreter: is every output row "
           "written?", submission_path)


@pytest.mark.judge
def test_values_3x128(submission: ModuleType, run_seed: int, submission_path: Path) -> None:
    """S = T = 384 (3 x 128): tiles that assume multiples of 256 leave no query row or key out"""
    arrays = _draw(np.random.default_rng([run_seed, 5]), *VALUES_3X128, F32)
    _check(submission, arrays, F32, TOL_F32, _name(*VALUES_3X128, F32),
           "Memory nothing was written to reads as NaN under the strict interpreter: does every query block "
           "get written, and every key block get read, when S and T are 3 x 128?", submission_path)


@pytest.mark.judge
def test_values_very_negative_logits(submission: ModuleType, run_seed: int, submission_path: Path) -> None:
    """Rows whose every logit is near -130 or -40 give the right values: the running max starts at -inf, and is
    the max of the scores exponentiated"""
    q, k, v = _draw(np.random.default_rng([run_seed, 6]), *VALUES_F32, F32)
    k[:, 0] = 8.0  # one shared direction: -q[:, 0] * 8 / sqrt(D) pushes a whole row's logits down
    q[::2, 0] = -130.0  # every other row: all its logits near -130
    q[1::4, 0] = -40.0  # a quarter of the rows: near -40, where exp(s) is still a number but exp(-8 s) is not
    _check(submission, (q, k, v), F32, TOL_F32, _name(*VALUES_F32, F32) + " where half the rows have logits "
           "near -130 and a quarter near -40", "Every logit of those rows is very negative, so exp(s - m) "
           "underflows to 0 for all of a row's keys unless m is that row's real max (l stays 0 and acc / l is "
           "0 / 0), and overflows when m is far below it. Start m at -inf, so the first KV block sets it, take it "
           "over the scores you exponentiate, and subtract it before exponentiating.", submission_path)


@pytest.mark.judge
def test_values_bfloat16(submission: ModuleType, run_seed: int, submission_path: Path) -> None:
    """bfloat16 q, k, v (S = 128, T = 512, D = 128) within 2% (rtol) / 0.01 (atol)"""
    arrays = _draw(np.random.default_rng([run_seed, 4]), *VALUES_BF16, BF16)
    _check(submission, arrays, BF16, TOL_BF16, _name(*VALUES_BF16, BF16),
           "Memory nothing was written to reads as NaN under the strict interpreter: is every output row "
           "written, and the running max subtracted?", submission_path)


@pytest.mark.judge
@pytest.mark.points(2)
def test_kernel_does_the_work(submission: ModuleType, submission_path: Path) -> None:
    """One `pallas_call` reads q, k and v as given, and its output is the result"""
    for s, t, d, dtype in SHAPES[2:]:
        specs = _specs(s, t, d, dtype)
        outside = tpu_fallback(lambda specs=specs: work_outside(submission.attention, *specs, prims=OUTSIDE,
                                                                path=submission_path))
        if outside:
            prim, line = outside[0]
            verb = "multiplies" if prim == "dot_general" else f"computes `{prim}`"
            fail(f"{quote_line(submission_path, line) or 'your wrapper'} {verb} outside the kernel: scores, "
                 "softmax and the product with v all belong in the `pallas_call`, block by block.")
        flow = tpu_fallback(lambda specs=specs: kernel_flow(submission.attention, *specs, path=submission_path))
        check(len(flow.calls) == 1, f"`attention` makes {len(flow.calls)} `pallas_call`s; make exactly one.")
        (result,) = flow.results
        if result.kind == "op":
            fail(f"the result is made by `{result.op}` ({quote_line(submission_path, result.line)}) after "
                 "the kernel: a second pass over the output in HBM. Write the final, normalized output "
                 "in its dtype from the kernel.")
        check(result.kind == "kernel", f"the result is {result.describe()}, not the kernel's output.")
        call = flow.calls[0]
        operands = flow.operands[0][call.num_index:call.num_index + call.num_inputs]
        for i, src in enumerate(operands):
            if src.kind == "op":
                fail(f"operand {i} of the `pallas_call` is made by `{src.op}` "
                     f"({quote_line(submission_path, src.line)}) before the kernel: a pass over it in HBM. "
                     "Pass q, k and v as they are, and scale inside the kernel.")
        check(sorted(s.index for s in operands if s.kind == "argument") == [0, 1, 2],
              f"the `pallas_call` receives {', '.join(s.describe() for s in operands)}; give it q, k and v.")


def _where(eqn: Any, outer: tuple[Any, ...], path: Path) -> str:
    """The learner's line of an equation (or of the nearest enclosing one), quoted; '' when unknown."""
    for e in (eqn, *reversed(outer)):
        line = learner_line(e, path)
        if line:
            return quote_line(path, line)
    return ""


@pytest.mark.judge
@pytest.mark.points(2)
def test_no_score_matrix(submission: ModuleType, submission_path: Path) -> None:
    """At S = T = 16384 no array or ref of S x T elements exists, in the wrapper or the kernel"""
    s, t, d = *BIG, 128
    closed = tpu_fallback(lambda: traced(submission.attention, *_specs(s, t, d, F32)))
    for eqn, outer in walk_eqns(closed.jaxpr):
        in_kernel = any(o.primitive.name == "pallas_call" for o in outer)
        avals = [v.aval for v in eqn.outvars]
        if eqn.primitive.name == "pallas_call":
            avals = [v.aval for v in eqn.params["jaxpr"].invars]
        elif eqn.primitive.name == "run_scoped":
            avals += [v.aval for v in eqn.params["jaxpr"].invars]
        for aval in avals:
            shape = tuple(getattr(aval, "shape", ()))
            if math.prod(shape) >= s * t:
                where = _where(eqn, outer, submission_path)
                place = "the kernel" if in_kernel or eqn.primitive.name == "pallas_call" else "the wrapper"
                what = "ref" if hasattr(aval, "inner_aval") else "array"
                fail(f"{where + ' ' if where else ''}makes a {list(shape)} {what} "
                     f"in {place}: that is the size of the S x T score matrix (S = T = {s}). Flash attention "
                     "meets the keys one (bk, D) block at a time, so scores exist only as a (bq, bk) tile.")


@pytest.mark.judge
@pytest.mark.points(2)
def test_kv_streamed_over_last_grid_axis(submission: ModuleType, submission_path: Path) -> None:
    """A 2-D grid: k and v in (bk, D) blocks walked by the last axis only; q and the output follow the first"""
    for s, t, d, dtype in SHAPES:
        info = grid_info(_call(submission, submission_path, s, t, d, dtype))
        q_block, k_block, v_block = info.inputs()
        out = info.outputs()[0]
        check(len(info.grid) == 2, f"for {_name(s, t, d, dtype)} your grid is {info.grid}: make it "
                                   "(S // bq, T // bk), the KV axis last.")
        for block, what in ((k_block, "k"), (v_block, "v")):
            if block.whole(0) and t >= LARGEST:
                fail(f"for T = {t} the {what} block is {block.shape_text()}, the whole of {what}: stream it in "
                     "blocks along the last grid axis, so that a query block meets the keys one block at a time "
                     "and never holds all T of them.")
            check(block.axes_moving(0) <= {1} and not block.moves[0],
                  f"the {what} block is moved by grid axis {sorted(block.moved())}: only the last axis (the "
                  "KV axis) may walk k and v.")
            check(block.whole(1), f"the {what} block {block.shape_text()} must span all of D ({d}).")
        for block, what in ((q_block, "q"), (out, "output")):
            check(not block.moves[1] and block.whole(1),
                  f"the {what} block {block.shape_text()} is moved by grid axes {sorted(block.moved())}: it "
                  "must follow the first grid axis only and span all of D, staying put while the KV "
                  "axis walks the keys.")
        check(info.grid[1] >= 2 or t < LARGEST, f"with T = {t} the KV axis has {info.grid[1]} step(s): use "
                                                "key blocks smaller than T, walked by the last grid axis.")
        rows, keys = info.grid[0] * q_block.block_dims[0], info.grid[1] * k_block.block_dims[0]
        check(keys <= t, f"for {_name(s, t, d, dtype)} the KV axis has {info.grid[1]} steps of {k_block.block_dims[0]} "
                         f"keys, {keys} key rows fetched per query block for T = {t}: each k and v block is "
                         f"fetched {keys / t:g} times. The grid is (S / bq, T / bk): one pass over the keys, "
                         "with the online softmax folding each block in as it arrives.")
        check(rows <= s, f"for {_name(s, t, d, dtype)} the query axis has {info.grid[0]} steps of "
                         f"{q_block.block_dims[0]} rows, {rows} for S = {s}: each query block is visited "
                         f"{rows / s:g} times. The grid is (S / bq, T / bk).")


@pytest.mark.judge
def test_blocks_are_tpu_tiles(submission: ModuleType, submission_path: Path) -> None:
    """Blocks divide the arrays, and their last two dims are multiples of (8, 128) (float32) or (16, 128)
    (bfloat16), or the whole dimension"""
    for s, t, d, dtype in SHAPES:
        info = grid_info(_call(submission, submission_path, s, t, d, dtype))
        for block, what in zip(info.blocks, ("q", "k", "v", "output"), strict=False):
            problem = tile_problem(block)
            check(problem is None, f"for {_name(s, t, d, dtype)} the {what} block {block.shape_text()} is not a "
                                   f"TPU tile: {problem}.")


@pytest.mark.judge
def test_working_set_fits_vmem(submission: ModuleType, submission_path: Path) -> None:
    """At every shape traced, S = T = 16384 in both dtypes included, the blocks (twice each), the scratch and the
    (bq, bk) float32 scores and their exponentials stay under the 16 MiB of scoped VMEM"""
    for s, t, d, dtype in SHAPES:
        call = _call(submission, submission_path, s, t, d, dtype)
        info = grid_info(call)
        total, items = vmem_bytes(call, info)
        bq, bk = info.inputs()[0].block_dims[0], info.inputs()[1].block_dims[0]
        scores = SCORE_TILES * bq * bk * 4
        parts = [i.text() for i in items]
        parts.append(f"scores and their exp [{bq}, {bk}] float32 x2 = {scores / 2**20:.1f} MiB")
        check(total + scores < VMEM_BUDGET,
              f"for {_name(s, t, d, dtype)} the kernel holds {(total + scores) / 2**20:.1f} MiB of VMEM "
              f"({'; '.join(parts)}): a working set must stay under the 16 MiB of scoped VMEM a TPU v5e core gives "
              "a kernel. Every blocked operand is double-buffered by the pipeline, and each step's (bq, bk) scores "
              "live in VMEM: use smaller blocks.")


@pytest.mark.judge
@pytest.mark.points(2)
def test_softmax_state_is_float32_vmem(submission: ModuleType, submission_path: Path) -> None:
    """Every ref carried across KV steps (m, l, acc) is float32 in VMEM, and a (bq, D) accumulator exists"""
    for s, t, d, dtype in (SHAPES[1], SHAPES[3]):
        call = _call(submission, submission_path, s, t, d, dtype)
        out = grid_info(call).outputs()[0]
        found = taint_pass(call).accumulators()
        for acc in found:
            where = quote_line(submission_path, acc.line) or "the kernel"
            check(acc.dtype == F32, f"{where} keeps softmax state in a {acc.dtype.name} ref (`{acc.name}`): "
                                    "it rounds at every KV step. Keep m, l and acc in float32 VMEM scratch.")
            check(acc.space in ("vmem", "default"),
                  f"{where} keeps softmax state in `{acc.name}`, in {acc.space.upper()}: keep it in VMEM.")
        check(any(a.shape == out.block_dims for a in found),
              f"for {_name(s, t, d, dtype)} no ref of the output block's shape {list(out.block_dims)} sums "
              "p @ v across KV steps: keep an unnormalized accumulator acc (bq, D) in float32 VMEM "
              "scratch, rescale it by alpha and add p @ v at every step.")


@pytest.mark.judge
@pytest.mark.points(1)
def test_matmuls_take_input_dtype_and_return_float32(submission: ModuleType, submission_path: Path) -> None:
    """For bfloat16 inputs, both kernel matmuls take bfloat16 operands and return float32"""
    for s, t, d, dtype in (SHAPES[1], SHAPES[3]):
        call = _call(submission, submission_path, s, t, d, dtype)
        dots = [(e, outer) for e, outer in walk_eqns(call.jaxpr) if e.primitive.name == "dot_general"]
        check(len(dots) >= 2, f"the kernel makes {len(dots)} matmul(s): it needs two, q k^T and p v.")
        taints, v_name = taint_pass(call), call.arg_names[call.num_index + 2]
        for eqn, outer in dots:
            ins = [np.dtype(v.aval.dtype) for v in eqn.invars]
            res = np.dtype(eqn.outvars[0].aval.dtype)
            where = _where(eqn, outer, submission_path) or "a matmul in the kernel"
            if any(i != BF16 for i in ins):
                if taints.depends_on(eqn.invars[1], v_name) or taints.depends_on(eqn.invars[0], v_name):
                    fail(f"{where} multiplies {ins[0].name} by {ins[1].name}: feed the MXU bfloat16 (cast p to "
                         "v's dtype) and ask for float32 with `preferred_element_type=jnp.float32`.")
                fail(f"{where} multiplies {ins[0].name} by {ins[1].name} for q k^T: the bfloat16 q and k blocks "
                     "were converted first, and a float32 matmul takes several MXU passes. Feed q and k as they "
                     "are and ask for float32 scores with `preferred_element_type=jnp.float32`.")
            check(res == F32, f"{where} returns {res.name}: pass `preferred_element_type=jnp.float32`.")


@pytest.mark.judge
@pytest.mark.points(1)
def test_normalized_once_at_the_end(submission: ModuleType, submission_path: Path) -> None:
    """The (bq, D) output is divided by l only at the last KV step"""
    s, t, d = VALUES_F32
    call = _call(submission, submission_path, s, t, d, F32)
    info = grid_info(call)
    kv = _kv_axis(info)
    if kv is None:
        return  # the grid check says what is wrong with the axes
    try:
        trace = trace_kernel(call)
    except TraceUnsupported as exc:
        fail(f"the grader could not follow your kernel: {exc}.")
    taints = taint_pass(call)
    v_name = call.arg_names[call.num_index + 2]
    shape = info.outputs()[0].block_dims
    last = info.grid[kv] - 1
    for event in trace.ops("div"):
        if event.shape == shape and event.step[kv] < last and taints.depends_on(event.eqn.invars[0], v_name):
            where = quote_line(submission_path, event.line) or "the kernel"
            fail(f"{where} divides a {list(shape)} array at KV step {event.step[kv]} of {last + 1}: normalize "
                 "once, at the last KV step (acc / l), and keep acc unnormalized until then. Each earlier "
                 "divide is a (bq, D) pass the result does not need.")


@pytest.mark.judge
def test_kv_axis_is_arbitrary(submission: ModuleType, submission_path: Path) -> None:
    """If `dimension_semantics` are given, the KV axis is 'arbitrary'"""
    info = grid_info(_call(submission, submission_path, *BIG, 128, F32))
    kv = _kv_axis(info)
    if kv is None or info.semantics is None:
        return
    given = info.semantic(kv)
    check(given == "arbitrary",
          f"the KV axis (grid axis {kv}) is marked {given!r}: its steps update one running softmax in "
          "order, so it must be 'arbitrary'; only the query axis may be 'parallel'.")


@pytest.mark.judge
def test_lowers_for_tpu(submission: ModuleType, submission_path: Path) -> None:
    """Every kernel lowers for a TPU, as the chip would compile it"""
    from course.grading import assert_lowers_for_tpu  # kept beside its one use

    for s, t, d, dtype in SHAPES:
        assert_lowers_for_tpu(submission.attention, *_specs(s, t, d, dtype), name="attention", path=submission_path)
