"""Grader of `no_host_sync`: SGD values, device arrays, a train loop that never waits (gated), a timer that does."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from course.grading.feedback import check, fail
from course.grading.judge.arrays import assert_array, assert_is_array, describe_value
from course.grading.observe.calls.compiles import CompileRecorder, own_function_names
from course.grading.observe.calls.there import in_executor
from course.grading.observe.calls.waits import ClockRead, Gate, TimingLog, WaitRecorder
from course.grading.observe.calls.warmup import after_warmup, watched_calls
from course.grading.observe.traces.loops import line_text

D, B = 8, 32
STEPS, GATED_STEPS, LR = 6, 2, 0.05
N_ITER = 3  # not the default 5: time_step must time the number of calls it is asked for
DEFAULT_N_ITER = 5  # what the task states time_step's n_iter defaults to
GATE_FACTORS = (1, 3, 9)  # a loop that returns early once has not waited; only a wait fails all three
WAIT_ADVICE = ("Anything that needs a value waits for the device: float(), .item(), print or an f-string, an `if` or "
               "`bool`, np.asarray, jax.device_get, block_until_ready. Keep the losses as jax.Arrays and let the "
               "caller read them once, after the loop.")


def _inputs(rng: np.random.Generator, steps: int) -> tuple[dict[str, jax.Array], dict[str, jax.Array]]:
    """Random params and `steps` batches of a linear model with noise."""
    w_true = rng.standard_normal(D)
    x = rng.standard_normal((steps, B, D))
    y = x @ w_true + 0.5 + 0.1 * rng.standard_normal((steps, B))
    params = {"w": rng.standard_normal(D) * 0.1, "b": np.float64(0.0)}
    f32 = jnp.float32
    return ({k: jnp.asarray(v, f32) for k, v in params.items()}, {"x": jnp.asarray(x, f32), "y": jnp.asarray(y, f32)})


def _numpy_train(params: dict[str, jax.Array], batches: dict[str, jax.Array],
                 lr: float) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """SGD by hand in float64: the final params, each batch's loss before its update, and after it."""
    w, b = np.asarray(params["w"], np.float64), float(params["b"])
    before, after = [], []
    for x, y in zip(np.asarray(batches["x"], np.float64), np.asarray(batches["y"], np.float64), strict=True):
        r = x @ w + b - y
        before.append(np.mean(r**2))
        w, b = w - lr * 2 * x.T @ r / len(r), b - lr * 2 * np.mean(r)
        after.append(np.mean((x @ w + b - y) ** 2))
    return {"w": w, "b": np.float64(b)}, np.asarray(before), np.asarray(after)


def _train(submission: ModuleType, params: Any, batches: Any) -> tuple[Any, Any]:
    """One call of train, checked to return a pair."""
    out = submission.train(params, batches, LR)
    check(isinstance(out, tuple | list) and len(out) == 2,
          f"train returned {describe_value(out)}; it returns a pair (params, losses).")
    return out[0], out[1]


@pytest.mark.judge
@pytest.mark.points(2)
def test_train_values(submission: ModuleType, rng: np.random.Generator) -> None:
    """`train` runs one SGD step per batch and returns each batch's loss before its update"""
    params, batches = _inputs(rng, STEPS)
    want_params, want_losses, after = _numpy_train(params, batches, LR)
    new, losses = _train(submission, params, batches)
    got = np.asarray(jax.device_get(losses), np.float64).reshape(-1)
    if got.shape == after.shape and np.allclose(got, after, rtol=1e-4, atol=1e-6):
        fail(f"losses are {np.round(got[:3], 4).tolist()}..., the loss of each batch after its update; expected "
             f"{np.round(want_losses[:3], 4).tolist()}..., the loss each step computes before changing the params "
             "(the value of `jax.value_and_grad`).")
    assert_array(jnp.asarray(got, jnp.float32), want_losses.astype(np.float32), name="losses", rtol=1e-4, atol=1e-6)
    check(isinstance(new, dict) and set(new) == {"w", "b"},
          f"train returned params {describe_value(new)}; they are a dict with the keys 'b' and 'w'.")
    for key in ("w", "b"):
        leaf = np.asarray(jax.device_get(new[key]), np.float64)
        assert_array(jnp.asarray(leaf, jnp.float32), want_params[key].astype(np.float32),
                     name=f"params['{key}'] after {STEPS} steps", rtol=1e-4, atol=1e-6)


@pytest.mark.judge
@pytest.mark.points(1)
def test_returns_device_arrays(submission: ModuleType, rng: np.random.Generator) -> None:
    """`train` returns jax.Arrays: params float32 of their shapes, losses float32 (S,)"""
    params, batches = _inputs(rng, STEPS)
    new, losses = _train(submission, params, batches)
    check(isinstance(losses, jax.Array),
          f"train returned losses as {describe_value(losses)}: return a jax.Array (`jnp.stack` of the step losses, "
          "or the scan's output). Turning them into Python floats or NumPy reads each value to the host, which waits "
          "for the device at every step.")
    check(losses.dtype == jnp.float32 and losses.shape == (STEPS,),
          f"train returned losses {describe_value(losses)}; expected float32[{STEPS}], one per batch.")
    check(isinstance(new, dict) and set(new) == {"w", "b"},
          f"train returned params {describe_value(new)}; they are a dict with the keys 'b' and 'w'.")
    for key, shape in (("w", (D,)), ("b", ())):
        leaf = assert_is_array(new[key], f"params['{key}'] from train")
        check(leaf.dtype == jnp.float32 and leaf.shape == shape,
              f"train returned params['{key}'] {describe_value(leaf)}; expected float32{list(shape)}.")


def _gated_call(submission: ModuleType, gate: Gate, rng: np.random.Generator, factor: float,
                names: set[str], path: Path) -> tuple[bool, WaitRecorder, CompileRecorder]:
    """Call train on held inputs: (whether it returned while they were still being computed, its waits, compiles)."""
    params, batches = _inputs(rng, GATED_STEPS)
    held_params, held_batches, marker = gate.hold((params, batches, jnp.zeros(())), factor)
    with CompileRecorder(names) as compiles, WaitRecorder(path, (vars(submission),)) as waits:
        out = submission.train(held_params, held_batches, LR)
    early = not marker.is_ready()
    jax.block_until_ready((out, marker))
    return early, waits, compiles


@pytest.mark.points(3)
def test_no_wait_inside_train(submission: ModuleType, rng: np.random.Generator, submission_path: Path) -> None:
    """`train` returns before its inputs are computed: it never reads a value or waits for the device"""
    names = own_function_names(submission)
    jax.block_until_ready(_train(submission, *_inputs(rng, GATED_STEPS)))  # the warm-up compiles
    gate = Gate(0.4)
    for factor in GATE_FACTORS:
        early, waits, compiles = _gated_call(submission, gate, rng, factor, names, submission_path)
        if early:
            return
        first = waits.first()
        if first is not None and first.pending and (not first.polling or waits.polled_again(first)):
            break  # a wait on a value still being computed, or a busy loop on one: no need to ask again
    held = (f"train was given arrays still being computed (about {gate.seconds * factor:.1f} s of device work) and "
            "returned only once they were ready: it waited for the device.")
    if first is not None:
        how = "polling `is_ready()`" if first.polling else f"`{first.what}`"
        fail(f"{held} It was waiting at {line_text(first.line, submission_path)} ({how}). {WAIT_ADVICE}")
    if compiles.count():
        fail(f"{held} It compiled {compiles.count()} time(s) while it ran "
             f"({', '.join(dict.fromkeys(compiles.fun_names()))}): build the jitted step once, at module scope, so "
             "that a call of train only dispatches work.")
    fail(f"{held} {WAIT_ADVICE}")


@pytest.mark.judge
@pytest.mark.points(1)
def test_compiles_once(submission: ModuleType, rng: np.random.Generator, submission_path: Path) -> None:
    """`train` compiles nothing after its first call: 2 more calls with new batches of the same shapes"""
    cases = [(*_inputs(rng, GATED_STEPS), LR) for _ in range(3)]
    # The first call is the warm-up. The compiles are reported where the calls ran, and weighed here
    # against the programs' own texts: a call that runs a program no earlier call ran compiled it.
    later = after_warmup(watched_calls(submission.train, cases, module=submission, path=submission_path))
    if later.compiles:
        why = f"; each call builds {max(later.built // 2, 1)} new jax.jit wrapper(s)" if later.built else ""
        fail(f"2 more calls of train compiled {later.compiles} time(s) ({later.names}){why}: build the "
             "jitted step once, at module scope, and call it in the loop.")


def _fresh_step(jitter: float) -> Any:
    """A step function never compiled before (its constant, 1 + jitter, is drawn): 48 matmuls of 512 x 512.

    It returns a pytree, (array, {name: array}), as a training step returns (params, loss): a timer
    must wait for every leaf of what the step returns, whatever its structure.
    """
    scale = 1 + jitter

    def timed_step(a: jax.Array) -> tuple[jax.Array, dict[str, jax.Array]]:
        out = jax.lax.fori_loop(0, 48, lambda _, v: jnp.tanh(v @ v) * scale, a)
        return out, {"mean": jnp.mean(out)}

    return jax.jit(timed_step)


# Seconds the grader's clock moves per call of step_fn started: the clock is virtual, so the right
# answer is exactly TICK seconds per call on any machine, however time_step brackets the calls.
TICK = 0.25


class _TickingLog(TimingLog):
    """A timing log whose clock reads TICK seconds per call of step_fn started so far."""

    def clock(self) -> float:
        """Note what had happened, as `TimingLog` does, and return the virtual time."""
        super().clock()
        return self.calls_started * TICK


def _timed(submission: ModuleType, rng: np.random.Generator, n_iter: int | None = N_ITER) -> tuple[Any, TimingLog]:
    """Call time_step on a fresh step with the grader's clock: (its result, what each clock reading saw).

    With `n_iter=None` the call leaves n_iter out, so time_step uses its own default. The call is made where the
    learner's code runs (the clock and the step are the grader's functions, handed to theirs); the readings are
    that process's record, and the result is judged here.
    """
    result, reads = _time_step_there(submission, float(rng.uniform(0, 1e-3)), -1 if n_iter is None else n_iter)
    if not isinstance(reads, list | tuple) or not all(
            isinstance(r, list | tuple) and len(r) == 6 and all(type(v) is int and v >= 0 for v in r) for r in reads):
        fail("the record of time_step's clock readings came back malformed, which no call of time_step makes.")
    # The readings as that process recorded them, in a log of the grader's own kind (its clock is not read here).
    return result, TimingLog(reads=[ClockRead(r[0], r[1], r[2], r[3], bool(r[4]), r[5]) for r in reads])


@in_executor
def _time_step_there(submission: ModuleType, jitter: float, n_iter: int) -> tuple[Any, list[list[int]]]:
    """`time_step` of a fresh step with the grader's clock (n_iter < 0: left out), and each reading as numbers."""
    step, arg = _fresh_step(jitter), jnp.full((512, 512), 0.01, jnp.float32)
    given = {} if n_iter < 0 else {"n_iter": n_iter}
    with CompileRecorder({"timed_step"}) as rec:
        log = _TickingLog(compiles=rec.count)
        result = submission.time_step(log.wrap(step), arg, clock=log.clock, **given)
        jax.block_until_ready(log.outputs)
    reads = [[r.index, r.calls_started, r.calls_returned, r.pending, int(r.warmup_pending), r.compiles]
             for r in log.reads]
    return result, reads


def _two_readings(log: TimingLog) -> tuple[ClockRead, ClockRead]:
    """The first and last reading, once there are two."""
    check(len(log.reads) >= 2, f"time_step read the given clock {len(log.reads)} time(s); a timed window needs a "
                               "reading of `clock()` at its start and one at its end.")
    return log.reads[0], log.reads[-1]


@pytest.mark.judge
@pytest.mark.points(1)
def test_time_step_uses_clock(submission: ModuleType, rng: np.random.Generator) -> None:
    """`time_step` times n_iter calls with the clock it is given and returns seconds per call, a float > 0"""
    result, log = _timed(submission, rng)
    check(len(log.reads) >= 2, f"time_step read the given clock {len(log.reads)} time(s), expected at least 2: "
                               "call `clock()`, the function passed as `clock`, at the start and the end of the timed "
                               "calls (the grader passes its own clock to see when you read it).")
    first, last = log.reads[0], log.reads[-1]
    timed = log.calls_between(first, last)
    check(timed == N_ITER, f"time_step with n_iter={N_ITER} timed {timed} call(s) of step_fn between its first and "
                           f"last clock reading; time exactly n_iter calls.")
    check(isinstance(result, float | np.floating) and np.isfinite(result) and result > 0,
          f"time_step returned {describe_value(result)}; it returns the seconds per call, a float > 0 "
          "((end - start) / n_iter).")
    check(np.isclose(result, TICK, rtol=1e-6), _per_call_message(float(result)))
    _, default = _timed(submission, rng, n_iter=None)
    if len(default.reads) >= 2:
        timed = default.calls_between(default.reads[0], default.reads[-1])
        check(timed == DEFAULT_N_ITER, f"time_step called without n_iter timed {timed} call(s) of step_fn; its "
                                       f"default is n_iter={DEFAULT_N_ITER}, as the task states.")


def _per_call_message(result: float) -> str:
    """What a time_step result other than TICK seconds per call is, in words."""
    clock = (f"On the grader's clock each call of step_fn took exactly {TICK} s, so time_step with n_iter={N_ITER} "
             f"should return {TICK}; it returned {result:g}")
    if np.isclose(result, TICK * N_ITER, rtol=1e-6):
        return f"{clock}, the total of the {N_ITER} calls: divide the elapsed time by n_iter."
    if np.isclose(result, TICK * 1000, rtol=1e-6):
        return f"{clock}, milliseconds: return seconds, as the clock gives them."
    return f"{clock}: return (end - start) / n_iter, the seconds per call."


@pytest.mark.judge
@pytest.mark.points(1)
def test_time_step_excludes_compile(submission: ModuleType, rng: np.random.Generator) -> None:
    """`time_step` calls step_fn once before the clock starts, so no compile falls inside the timed window"""
    _, log = _timed(submission, rng)
    first, last = _two_readings(log)
    check(first.calls_returned >= 1, "step_fn is first called after the clock started, so the timed window "
                                     "includes its compilation: call it once (and wait for it) before `clock()`.")
    check(last.compiles == first.compiles, f"step_fn compiled {last.compiles - first.compiles} time(s) between the "
                                           "first and the last clock reading: warm up with the same arguments "
                                           "before starting the clock.")


@pytest.mark.judge
@pytest.mark.points(1)
def test_time_step_warmup_waited(submission: ModuleType, rng: np.random.Generator) -> None:
    """The warm-up call has finished when the clock starts"""
    _, log = _timed(submission, rng)
    first, _ = _two_readings(log)
    check(first.calls_returned >= 1, "the clock started before any call of step_fn: there is no warm-up to wait for.")
    check(not first.warmup_pending and first.pending == 0,
          f"when the clock started, the warm-up call was still running ({first.pending} call(s) of step_fn "
          "dispatched but not finished): the timed window would include its work. Wait for it with "
          "`jax.block_until_ready(step_fn(*args))` before `clock()`.")


@pytest.mark.judge
@pytest.mark.points(1)
def test_time_step_waits_for_result(submission: ModuleType, rng: np.random.Generator) -> None:
    """Every later clock reading is taken after the results of the timed calls are ready"""
    _, log = _timed(submission, rng)
    _two_readings(log)
    total = len(log.reads)
    for read in log.reads[1:]:
        check(read.pending == 0,
              f"clock reading {read.index} of {total} was taken while {read.pending} call(s) of step_fn had been "
              "dispatched but were not finished: a jitted call returns before the device has run it, so this times "
              "the dispatch only. Wait for the result (`jax.block_until_ready(out)`) before reading the clock.")
