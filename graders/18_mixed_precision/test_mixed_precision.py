"""Grader of `mixed_precision`: bf16 operands with f32 results, matmul dtypes from the jaxpr, f32 master weights."""

from __future__ import annotations

import itertools
from pathlib import Path
from types import ModuleType
from typing import Any

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

from course.grading.feedback import check, fail
from course.grading.judge.arrays import assert_is_array, describe_value
from course.grading.observe.calls.recompiles import later_calls
from course.grading.observe.calls.reruns import called_programs, program_values
from course.grading.observe.calls.there import in_executor
from course.grading.observe.traces.loops import line_text
from course.grading.observe.traces.matmuls import Matmul, float32_matmuls, matmuls_in, matmuls_of

B, K, N, D_OUT = 256, 64, 128, 8
DENSE_TOL = 1e-5  # of the largest |entry|: the right product is off by ~1e-7, a bf16 output by ~3e-3
LOSS_TOL = 1e-5  # relative: ~1e-7 when right; f32 operands 1e-4, a bf16 prediction 1e-3
STEP_LOSS_TOL = 1e-2  # relative: at lr=0.5 the loss after the update is 14-19% away; values are loss_values' job
MOVE_TOL = 0.05  # of the expected change after 5 steps: ~0.3% when right, 100% or more in bfloat16
STEPS, LR = 5, 1e-3
SINGLE_ROWS = 8  # one-row batches loss_fn is tried on: measured, a wrong rounding is off by 7e-4 or more in one
LR_PAIR = (0.5, 0.25)  # two learning rates for one step from the same params: the moves must keep their ratio
_BF16 = ml_dtypes.bfloat16


def _bf(a: Any) -> np.ndarray:
    """An array rounded to bfloat16 (through float32, as JAX rounds it), back in float64."""
    return np.asarray(a, np.float32).astype(_BF16).astype(np.float64)


def _params(rng: np.random.Generator) -> dict[str, jax.Array]:
    """Master weights near 0.1, where a bfloat16 step (2^-11) dwarfs one SGD update at lr=1e-3."""
    raw = {"w1": rng.standard_normal((K, N)) / 8, "b1": rng.standard_normal(N) * 0.1,
           "w2": rng.standard_normal((N, D_OUT)) / 11, "b2": rng.standard_normal(D_OUT) * 0.1}
    return {k: jnp.asarray(v, jnp.float32) for k, v in raw.items()}


def _batch(rng: np.random.Generator) -> dict[str, jax.Array]:
    """256 rows of 64 features and 8 targets."""
    return {"x": jnp.asarray(rng.standard_normal((B, K)), jnp.float32),
            "y": jnp.asarray(rng.standard_normal((B, D_OUT)), jnp.float32)}


def _forward(p: dict[str, Any], batch: dict[str, Any]) -> tuple[float, dict[str, np.ndarray]]:
    """The spec's loss in float64, rounding only the matmul operands, and what its gradient needs."""
    p = {k: np.asarray(v, np.float64) for k, v in p.items()}
    x, y = (np.asarray(batch[k], np.float64) for k in ("x", "y"))
    h = np.tanh(_bf(x) @ _bf(p["w1"]) + p["b1"])
    r = _bf(h) @ _bf(p["w2"]) + p["b2"] - y
    return float(np.mean(r**2)), {"x": x, "h": h, "r": r, **p}


def _spec_loss(p: dict[str, Any], batch: dict[str, Any]) -> float:
    """The loss of the spec, in float64."""
    return _forward(p, batch)[0]


@jax.jit
def _float32_loss(p: dict[str, Any], batch: dict[str, Any]) -> jax.Array:
    """The spec's loss as a float32 program computes it: only the matmul operands in bfloat16.

    A correct `loss_fn` rounds the same float32 hidden values to bfloat16 as this does; the float64 spec
    rounds exact ones, and where the two straddle a bfloat16 rounding boundary a hidden value moves by
    one bfloat16 step, which moves a 4-row loss by about 1e-5: more than a right answer may differ by.
    """
    def dense(x: jax.Array, w: jax.Array) -> jax.Array:
        return jnp.dot(x.astype(jnp.bfloat16), w.astype(jnp.bfloat16), preferred_element_type=jnp.float32)

    h = jnp.tanh(dense(batch["x"], p["w1"]) + p["b1"])
    return jnp.mean(jnp.square(dense(h, p["w2"]) + p["b2"] - batch["y"]))


# A hidden value a correct program computes with another summation order than `_float32_loss` may differ from it
# in its last bits (a few float32 steps for 64 products); where that straddles a bfloat16 rounding boundary, the
# two round it to neighbouring bfloat16 values, and a 1-row loss moves by up to 1e-3.
STRADDLE = 4e-6
MAX_STRADDLES = 8  # more only in batches of many rows, whose mean averages each straddle out


def _straddled_losses(p: dict[str, Any], batch: dict[str, Any]) -> list[float]:
    """The loss for each way of rounding the hidden values that sit within STRADDLE of a bfloat16 rounding
    boundary, the others rounded as `_float32_loss` rounds them; [] when none does, or too many."""
    def rounded(a: Any) -> np.ndarray:
        return np.asarray(a, np.float32).astype(_BF16).astype(np.float64)

    z = np.asarray(jnp.dot(jnp.asarray(batch["x"], jnp.bfloat16), jnp.asarray(p["w1"], jnp.bfloat16),
                           preferred_element_type=jnp.float32) + p["b1"])
    h = np.asarray(jnp.tanh(z), np.float32)
    low, high = rounded(h * np.float32(1 - STRADDLE)), rounded(h * np.float32(1 + STRADDLE))
    where = [tuple(i) for i in np.argwhere(low != high)]
    if not 0 < len(where) <= MAX_STRADDLES:
        return []
    w2, b2, y = rounded(p["w2"]), np.asarray(p["b2"], np.float64), np.asarray(batch["y"], np.float64)
    base, losses = rounded(h), []
    for picks in itertools.product((low, high), repeat=len(where)):
        hb = base.copy()
        for at, pick in zip(where, picks, strict=True):
            hb[at] = pick[at]
        losses.append(float(np.mean(np.square(hb @ w2 + b2 - y))))
    return losses


def _spec_grads(p: dict[str, Any], batch: dict[str, Any]) -> dict[str, np.ndarray]:
    """Its gradient, in float64, letting each rounding pass the gradient through unchanged."""
    _, v = _forward(p, batch)
    dpred = 2 * v["r"] / v["r"].size
    dz = (dpred @ _bf(v["w2"]).T) * (1 - v["h"] ** 2)
    return {"w1": _bf(v["x"]).T @ dz, "b1": dz.sum(axis=0), "w2": _bf(v["h"]).T @ dpred, "b2": dpred.sum(axis=0)}


def _spec_sgd(p: dict[str, Any], batch: dict[str, Any], steps: int, lr: float) -> dict[str, np.ndarray]:
    """`steps` SGD steps in float64: what float32 master weights follow, to within their rounding."""
    p = {k: np.asarray(v, np.float64) for k, v in p.items()}
    for _ in range(steps):
        g = _spec_grads(p, batch)
        p = {k: p[k] - lr * g[k] for k in p}
    return p


def _gradient_scale(params: dict[str, Any], batch: dict[str, Any], got: dict[str, Any]) -> float | None:
    """The power of two k, or its negative (not 1), for which `got` is what STEPS float32 SGD steps at lr = k * LR
    give, or None."""
    start = {k: np.asarray(v, np.float64) for k, v in params.items()}
    for scale in (sign * 2.0**e for e in (0, *range(1, 17), *range(-1, -17, -1)) for sign in (1, -1)):
        if scale == 1:
            continue
        want = _spec_sgd(params, batch, STEPS, LR * scale)
        if all(_off(np.asarray(got[k], np.float64) - start[k], want[k] - start[k]) <= MOVE_TOL for k in _PARAMS):
            return scale
    return None


def _off(got: np.ndarray, want: np.ndarray) -> float:
    """The largest error as a fraction of the largest expected |entry|."""
    return float(np.max(np.abs(got - want)) / max(float(np.max(np.abs(want))), 1e-30))


def _dense_cause(got: np.ndarray, x: np.ndarray, w: np.ndarray) -> str:
    """The usual mistake whose result `got` matches, in words; empty when none does."""
    x64, w64 = np.asarray(x, np.float64), np.asarray(w, np.float64)
    if np.array_equal(got, _bf(got)):
        return (". Every entry is a bfloat16 number: the product was rounded to bfloat16 on the way out. A "
                "bfloat16 x bfloat16 matmul keeps its float32 result only when you ask for it: "
                "preferred_element_type=jnp.float32.")
    causes = ((x64 @ w64, "it equals the float32 product of the unrounded inputs: x and w were never cast to bfloat16"),
              (_bf(x64) @ w64, "it equals the product of bfloat16 x and unrounded w: cast w to bfloat16 too (a "
                               "bfloat16 x float32 matmul is promoted to float32)"),
              (x64 @ _bf(w64), "it equals the product of unrounded x and bfloat16 w: cast x to bfloat16 too"))
    for want, cause in causes:
        if _off(got, want) <= 10 * DENSE_TOL:
            return f": {cause}."
    return "."


@pytest.mark.judge
@pytest.mark.points(2)
def test_dense_values(submission: ModuleType, rng: np.random.Generator) -> None:
    """`dense(x, w)` is the exact product of x and w rounded to bfloat16, kept in float32"""
    for rows, k, n in ((B, K, N), (5, 3, 7)):
        x = jnp.asarray(rng.standard_normal((rows, k)), jnp.float32)
        w = jnp.asarray(rng.standard_normal((k, n)) / np.sqrt(k), jnp.float32)
        out = assert_is_array(submission.dense(x, w), f"dense(x, w) for x float32[{rows}, {k}]")
        check(out.shape == (rows, n) and out.dtype == jnp.float32,
              f"dense(x, w) for x float32[{rows}, {k}] and w float32[{k}, {n}] is {describe_value(out)}; expected "
              f"float32[{rows}, {n}]: keep the product in float32.")
        got, want = np.asarray(out, np.float64), _bf(x) @ _bf(w)
        if _off(got, want) > DENSE_TOL:
            fail(f"dense(x, w) for x float32[{rows}, {k}] is off by {_off(got, want):.1e} of its largest value "
                 f"(allowed {DENSE_TOL:g}) from the exact product of x and w rounded to bfloat16"
                 f"{_dense_cause(got, x, w)}")


def _spec(tree: dict[str, tuple[int, ...]]) -> dict[str, jax.ShapeDtypeStruct]:
    """float32 shapes for tracing."""
    return {k: jax.ShapeDtypeStruct(s, jnp.float32) for k, s in tree.items()}


_PARAMS = {"w1": (K, N), "b1": (N,), "w2": (N, D_OUT), "b2": (D_OUT,)}
_BATCH = {"x": (B, K), "y": (B, D_OUT)}


def _fault(m: Matmul, path: Path) -> str:
    """What is wrong with one matmul of bfloat16 intent, and what to write instead."""
    head = f"{line_text(m.line, path)} {m.dtype_text()}"
    if m.out_dtype != "float32" and "float32" not in (m.lhs_dtype, m.rhs_dtype):
        why = f" (precision={m.precision} does not change it)" if m.precision else ""
        return (f"{head}{why}: a bfloat16 x bfloat16 matmul rounds its result to bfloat16 unless you ask for a "
                "float32 result: preferred_element_type=jnp.float32")
    if m.lhs_dtype in ("float32", "float64") and m.rhs_dtype in ("float32", "float64"):
        return (f"{head}: a float32 x float32 matmul does the full-precision work even when its inputs were rounded "
                "through bfloat16 (or when `jax.default_matmul_precision` is set). Hand the matmul the bfloat16 arrays "
                "themselves: `jnp.dot(x.astype(jnp.bfloat16), w.astype(jnp.bfloat16), "
                "preferred_element_type=jnp.float32)`")
    return f"{head}: cast both operands to bfloat16 (a bfloat16 x float32 product is promoted to float32)"


def _bf16_matmul(m: Matmul) -> bool:
    """bfloat16 x bfloat16 -> float32: the matmul the lesson asks for."""
    return m.lhs_dtype == m.rhs_dtype == "bfloat16" and m.out_dtype == "float32"


@pytest.mark.judge
@pytest.mark.points(1)
def test_dense_dtypes(submission: ModuleType, submission_path: Path) -> None:
    """`dense` multiplies bfloat16 by bfloat16 into float32 (the `dot_general` of its jaxpr)"""
    found = matmuls_of(submission.dense, *_spec({"x": (B, K), "w": (K, N)}).values(), path=submission_path)
    check(found, "dense(x, w) runs no matmul (no `dot_general` in its jaxpr): compute it with `jnp.dot` or `@`.")
    bad = [m for m in found if not _bf16_matmul(m)]
    if bad:
        fail(f"dense: {_fault(bad[0], submission_path)}.")


@pytest.mark.judge
@pytest.mark.points(2)
def test_loss_values(submission: ModuleType, rng: np.random.Generator) -> None:
    """`loss_fn` is the spec's float32 loss, with only the matmul operands rounded to bfloat16"""
    params = _params(rng)
    # Fewer rows average out less of a rounding that should not be there: a hidden layer rounded to bfloat16 can
    # hide within the tolerance in a mean over 256 rows, never in every one of 8 single rows.
    singles = _batch(rng)
    cases = [(rows, {k: v[:rows] for k, v in _batch(rng).items()}) for rows in (B, 4)]
    cases += [(1, {k: v[r:r + 1] for k, v in singles.items()}) for r in range(SINGLE_ROWS)]
    for rows, batch in cases:
        loss = assert_is_array(submission.loss_fn(params, batch), "loss_fn(params, batch)")
        check(loss.shape == () and loss.dtype == jnp.float32,
              f"loss_fn(params, batch) is {describe_value(loss)}; it is a float32 scalar.")
        got, want = float(loss), float(_float32_loss(params, batch))
        rel = abs(got - want) / abs(want)
        straddled = _straddled_losses(params, batch) if rel > LOSS_TOL else []
        if rel > LOSS_TOL and not any(abs(got - alt) <= LOSS_TOL * abs(alt) for alt in straddled):
            size = "1 row" if rows == 1 else f"{rows} rows"
            fail(f"loss_fn gives {got:.7g} for a batch of {size}, expected {want:.7g} (relative error {rel:.1e}, "
                 f"allowed {LOSS_TOL:g}){_loss_cause(got, want, rows)}")


def _loss_sum(got: float, want: float, rows: int) -> str:
    """What a loss a whole number of times the mean summed instead of averaging, in words; '' if it is not one."""
    sums = {D_OUT: f"the {D_OUT} outputs of each row", rows: f"the {rows} rows", rows * D_OUT: "every element"}
    for factor, over in sums.items():
        if factor > 1 and abs(got - factor * want) <= 1e-3 * factor * abs(want):
            return (f"that is {factor} times the mean: the squared errors are summed over {over} instead of "
                    f"averaged. The loss is the mean over all {rows} x {D_OUT} elements (`jnp.mean` of the whole "
                    "array of squared errors)")
    return ""


def _loss_cause(got: float, want: float, rows: int) -> str:
    """The clause that ends a wrong loss's message: the sum it is, a rounding where none belongs, or the formula."""
    if summed := _loss_sum(got, want, rows):
        return f": {summed}."
    if abs(got - want) <= 0.05 * abs(want):  # close: a rounding the task does not ask for, or one it asks for missed
        return (": round only the operands of the two matmuls to bfloat16 (through `dense`); the biases, tanh, the "
                "prediction and the mean stay float32.")
    return ". Compare your code with the task's loss: mean((dense(tanh(dense(x, w1) + b1), w2) + b2 - y) ** 2)."


def _matmul_list(found: list[Matmul], path: Path) -> str:
    """The first offending matmul, and how many more."""
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return f"{_fault(found[0], path)}{more}"


@pytest.mark.judge
@pytest.mark.points(1)
def test_loss_matmuls_in_bf16(submission: ModuleType, submission_path: Path) -> None:
    """Every matmul of `loss_fn` multiplies bfloat16 by bfloat16 into float32"""
    found = matmuls_of(submission.loss_fn, _spec(_PARAMS), _spec(_BATCH), path=submission_path)
    check(found, "loss_fn runs no matmul (no `dot_general` in its jaxpr): the two layers are matmuls.")
    bad = [m for m in found if not _bf16_matmul(m)]
    if bad:
        fail(f"loss_fn has {len(bad)} matmul(s) of {len(found)} that are not bfloat16 x bfloat16 -> float32: "
             f"{_matmul_list(bad, submission_path)}.")


def _step(submission: ModuleType, params: Any, batch: Any, lr: float) -> tuple[dict[str, jax.Array], jax.Array]:
    """One call of train_step, its result checked to be (params dict, loss)."""
    out = submission.train_step(params, batch, lr)
    check(isinstance(out, tuple | list) and len(out) == 2,
          f"train_step returned {describe_value(out)}; it returns a pair (params, loss).")
    new, loss = out
    check(isinstance(new, dict) and set(new) == set(_PARAMS),
          f"train_step returned params {describe_value(new)}; they are a dict with the keys {sorted(_PARAMS)}.")
    return new, loss


@pytest.mark.judge
@pytest.mark.points(1)
def test_master_weights_float32(submission: ModuleType, rng: np.random.Generator) -> None:
    """`train_step` returns float32 master weights of the shapes it was given"""
    params, batch = _params(rng), _batch(rng)
    new, _ = _step(submission, params, batch, LR)
    wrong = []
    for key, shape in _PARAMS.items():
        leaf = assert_is_array(new[key], f"the params['{key}'] train_step returned")
        if leaf.dtype != jnp.float32 or leaf.shape != shape:
            wrong.append(f"{key}: {leaf.dtype}{list(leaf.shape)}")
    if wrong:
        fail(f"train_step returned {', '.join(wrong)}; expected float32 of the shapes given: the master weights "
             "stay float32, and only the matmul operands are cast to bfloat16, inside the step.")


@pytest.mark.judge
@pytest.mark.points(2)
def test_small_updates_kept(submission: ModuleType, rng: np.random.Generator) -> None:
    """After 5 steps at lr=1e-3, every parameter moved as float32 arithmetic says (within 5%)"""
    params, batch = _params(rng), _batch(rng)
    want = _spec_sgd(params, batch, STEPS, LR)
    start = {k: np.asarray(v, np.float64) for k, v in params.items()}
    current: Any = params
    for _ in range(STEPS):
        current, _ = _step(submission, current, batch, LR)
    for key in _PARAMS:
        got = np.asarray(assert_is_array(current[key], f"params['{key}'] after {STEPS} steps"), np.float64)
        check(got.shape == start[key].shape, f"params['{key}'] has shape {got.shape} after {STEPS} steps, expected "
                                             f"{start[key].shape}.")
        moved, expected = got - start[key], want[key] - start[key]
        off = _off(moved, expected)
        if off <= MOVE_TOL:
            continue
        scale = _gradient_scale(params, batch, current)
        if scale is not None:
            fail(f"params['{key}'] moved wrongly after {STEPS} steps at lr={LR:g}: every parameter moved as float32 "
                 f"SGD with its gradients multiplied by {scale:g} would. "
                 f"{_scale_cause(submission, params, batch, scale)}")
        how = ""
        if not moved.any():
            how = " it did not move at all, so every update was lost to rounding;"
        elif np.array_equal(got, _bf(got)):
            how = " its entries moved in whole bfloat16 steps (2^-11 near 0.1, four times the update);"
        fail(f"params['{key}'] moved wrongly after {STEPS} steps at lr={LR:g}: off by {off:.0%} of the expected "
             f"change;{how} an update of 1e-4 is below half a bfloat16 step of a weight near 0.1. Keep the master "
             "weights float32 and apply `p - lr * g` in float32.")
    _programs_make_the_step(submission, rng)


def _programs_make_the_step(submission: ModuleType, rng: np.random.Generator) -> None:
    """The params of the step just taken must be what the programs that call ran compute: the grader runs them
    itself on fresh params and a fresh batch, apart from the process running the learner's code. A call that ran no
    program at all, or an ahead-of-time compiled one, is left to the checks of its matmuls and its jit."""
    params, batch = _params(rng), _batch(rng)
    keys = sorted(_PARAMS)  # the result's leaves: the params dict's, in key order, then the loss
    values = program_values(
        submission.train_step, params, batch, LR, needed=len(keys), count=len(keys) + 1,
        made_outside="the params train_step returns are not all computed by the programs its call ran from `params` "
        "and `batch`: some are made outside them (by NumPy or Python), while the programs with the bfloat16 "
        "matmuls only stand beside. The step's own programs must make the update, and it is returned as they "
        "make it.")
    if values is None:
        return
    want, start = _spec_sgd(params, batch, 1, LR), {k: np.asarray(v, np.float64) for k, v in params.items()}
    for key, value in zip(keys, values[:len(keys)], strict=True):
        moved = np.asarray(value, np.float64) - start[key]
        off = _off(moved, want[key] - start[key]) if moved.shape == start[key].shape else np.inf
        check(off <= MOVE_TOL, f"the programs your call of train_step ran, run by the grader on fresh params and "
                               f"a fresh batch (lr={LR:g}), move params['{key}'] off by {off:.0%} of one float32 "
                               "SGD step: what they compute is not the step your calls returned.")


def _scale_cause(submission: ModuleType, params: Any, batch: Any, scale: float) -> str:
    """Why the gradients are `scale` times too large: `loss_fn` itself is that many times the task's loss (a sum
    where the mean belongs), or a loss scale was never undone."""
    if scale < 0:
        times = "" if scale == -1 else f"{-scale:g} times "
        return (f"The update adds {times}the gradient (`p + lr * g`), a step uphill that makes the loss grow: SGD "
                "subtracts it, `p - lr * g`.")
    loss, want = submission.loss_fn(params, batch), _spec_loss(params, batch)
    got = float(loss) if isinstance(loss, jax.Array) and loss.shape == () else None
    if got is not None and abs(got - scale * want) <= 1e-2 * scale * abs(want):
        return (f"Your loss_fn gives {got:.7g} for the params it starts from, {scale:g} times the task's {want:.7g}, "
                f"so its gradient is {scale:g} times too large as well: fix the loss (a mean over all the "
                "elements), and the updates follow.")
    return ("A loss scaled to keep small bfloat16 gradients alive must have its gradients divided by the same "
            "scale before the update.")


@pytest.mark.judge
@pytest.mark.points(1)
def test_step_follows_lr(submission: ModuleType, rng: np.random.Generator) -> None:
    """`train_step` steps by the lr it is given: one step at lr=0.5 moves every parameter twice as far as at 0.25"""
    params, batch = _params(rng), _batch(rng)
    start = {k: np.asarray(v, np.float64) for k, v in params.items()}
    moves = []
    for lr in LR_PAIR:
        # New copies for each call, in case the step donates them.
        new, _ = _step(submission, {k: jnp.array(v) for k, v in params.items()}, batch, lr)
        leaves = {k: assert_is_array(new[k], f"params['{k}'] after one step at lr={lr:g}") for k in _PARAMS}
        if any(leaf.dtype != jnp.float32 for leaf in leaves.values()):
            return  # master weights of another dtype: test_master_weights_float32 names that
        moves.append({k: np.asarray(leaves[k], np.float64) - start[k] for k in _PARAMS})
    far, near = (np.concatenate([m[k].ravel() for k in _PARAMS]) for m in moves)
    ratio = LR_PAIR[0] / LR_PAIR[1]
    if np.linalg.norm(far - ratio * near) <= 0.1 * np.linalg.norm(far):
        return
    seen = float(np.dot(far, near) / max(float(np.dot(near, near)), 1e-30))
    same = (" The step is the same whatever the lr: it ignores its `lr` argument (a learning rate fixed in the "
            "code?).") if abs(seen - 1) < 0.05 else ""
    fail(f"one step at lr={LR_PAIR[0]:g} moved the params {seen:.3g} times as far as one step at lr={LR_PAIR[1]:g} "
         f"from the same params; SGD moves them lr times the gradient, {ratio:g} times as far.{same} Apply "
         "`p - lr * g` with the lr `train_step` is given.")


@pytest.mark.points(1)
@in_executor
def _step_trace(submission: ModuleType, params: Any, batch: Any) -> Any:
    """The trace of `train_step(params, batch, LR)` at these types, made where the learner's code runs (the learning
    rate stays a Python float, as a learner passes it); the judge reads it. Only for a call whose programs cannot be
    sent (`_ran_matmuls`)."""
    return jax.make_jaxpr(lambda p, b: submission.train_step(p, b, LR))(params, batch)


def _ran_matmuls(submission: ModuleType, rng: np.random.Generator, path: Path) -> list[Matmul]:
    """The matmuls of every program one real call of `train_step` ran (its jit's, or, unjitted, those of each eager
    operation), read in the judge from what that call sent: the call's own programs, held like every plain call to
    the step's other calls. A call that ran an ahead-of-time compiled program, or more than 256 programs, sends none:
    then its trace, made where the learner's code runs."""
    _, programs = called_programs(submission.train_step, _params(rng), _batch(rng), LR)
    if programs is None:
        return matmuls_of(_step_trace(submission, _spec(_PARAMS), _spec(_BATCH)), path=path)
    return [m for closed in programs for m in matmuls_in(closed, path=path)]


@pytest.mark.judge
def test_train_step_matmuls(submission: ModuleType, rng: np.random.Generator, submission_path: Path) -> None:
    """`train_step` runs no float32 x float32 matmul, forward or backward"""
    found = _ran_matmuls(submission, rng, submission_path)
    check(found, "train_step runs no matmul (no `dot_general` in the programs it ran): it computes loss_fn and its "
                 "gradient.")
    wide = float32_matmuls(found)
    if wide:
        fail(f"train_step has {len(wide)} float32 x float32 matmul(s) of {len(found)}: "
             f"{line_text(wide[0].line, submission_path)} {wide[0].dtype_text()}. Differentiate loss_fn itself "
             "(`jax.value_and_grad(loss_fn)`): the backward matmuls then multiply float32 gradients by the bfloat16 "
             "operands the forward pass kept.")


@pytest.mark.judge
@pytest.mark.points(1)
def test_train_step_loss(submission: ModuleType, rng: np.random.Generator) -> None:
    """`train_step` returns the loss of the params it was given, before the update (within 1%)"""
    params, batch = _params(rng), _batch(rng)
    lr = 0.5  # a large step, so that the loss after it differs clearly from the loss before
    want = _spec_loss(params, batch)
    _, loss = _step(submission, params, batch, lr)
    got = assert_is_array(loss, "the loss train_step returned")
    check(got.shape == () and got.dtype == jnp.float32, f"train_step returned loss {describe_value(got)}; it is a "
                                                       "float32 scalar.")
    if abs(float(got) - want) > STEP_LOSS_TOL * abs(want):
        after = _spec_loss(_spec_sgd(params, batch, 1, lr), batch)
        summed = _loss_sum(float(got), want, B)
        why = (" That is the loss after the update: return the loss computed with the params the step was given."
               if abs(float(got) - after) <= STEP_LOSS_TOL * abs(after) else f" Here {summed}." if summed else "")
        fail(f"train_step returned loss {float(got):.7g}; expected float32 {want:.7g} within 1% (loss_fn of the "
             f"params it was given, lr={lr:g}).{why}")


@pytest.mark.judge
@pytest.mark.points(1)
def test_train_step_jitted(submission: ModuleType, rng: np.random.Generator, submission_path: Path) -> None:
    """`train_step` is jitted: after its first call, calls with the same arguments compile nothing"""
    params, batch = _params(rng), _batch(rng)

    def fresh() -> tuple[Any, ...]:
        """New copies of the params for each call, in case the step donates them."""
        return {k: jnp.array(v) for k, v in params.items()}, batch, LR

    later = later_calls(submission.train_step, fresh, path=submission_path, module=submission)
    check(later.jitted, later.message("train_step"))
