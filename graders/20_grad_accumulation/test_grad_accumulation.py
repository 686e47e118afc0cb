"""Grader of `grad_accumulation`: values, a loop of num_micro trips, float32 sums, memory per microbatch, compiles."""

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

from course.grading.feedback import CheckFailed, check, fail
from course.grading.judge.arrays import assert_array, assert_is_array, describe_value
from course.grading.judge.source import describe_exception, learner_location
from course.grading.observe.calls.programs import call_jitted, compile_program, size_text
from course.grading.observe.calls.warmup import after_warmup, watched_calls
from course.grading.observe.traces.jaxprs import traced
from course.grading.observe.traces.loops import EqnRuns, eqn_runs, line_text, loops_in, type_text
from course.grading.observe.traces.matmuls import Matmul, matmuls_of

D, H = 64, 256
TOL = 2e-4  # of the largest entry; float32 sums of four to eight microbatches stay near 1e-6
GROWTH = 1.1  # temp memory may grow by 10% from 4 to 16 microbatches of the same size


def _inputs(rng: np.random.Generator, rows: int) -> tuple[dict[str, jax.Array], dict[str, jax.Array]]:
    """Random params and a batch of `rows` rows whose targets the model misses by about one."""
    params = {"w1": rng.standard_normal((D, H)) / np.sqrt(D), "b1": rng.standard_normal(H) * 0.1,
              "w2": rng.standard_normal(H) / np.sqrt(H)}
    batch = {"x": rng.standard_normal((rows, D)), "y": rng.standard_normal(rows)}
    f32 = jnp.float32
    return ({k: jnp.asarray(v, f32) for k, v in params.items()}, {k: jnp.asarray(v, f32) for k, v in batch.items()})


def _spec(rows: int) -> tuple[dict[str, jax.ShapeDtypeStruct], dict[str, jax.ShapeDtypeStruct]]:
    """The shapes of params and of a batch of `rows` rows, for tracing and compiling."""
    s, f32 = jax.ShapeDtypeStruct, jnp.float32
    return ({"w1": s((D, H), f32), "b1": s((H,), f32), "w2": s((H,), f32)},
            {"x": s((rows, D), f32), "y": s((rows,), f32)})


def _traced(submission: ModuleType, path: Path, num_micro: int, rows: int) -> Any:
    """The trace of `accumulated_grads` at a batch of `rows` rows with num_micro passed untraced, as a learner
    passes it (a traced num_micro explained). Made where the learner's code runs, beside a plain call at the very
    same arguments whose loops and kernels the trace must show (`traced(..., static=...)`): its inputs are real
    arrays, so that call can run."""
    with _num_micro_explained(path):
        return traced(submission.accumulated_grads, *_inputs(np.random.default_rng(rows), rows),
                      static=(num_micro,))


@contextlib.contextmanager
def _num_micro_explained(path: Path) -> Iterator[None]:
    """Fail in the course's words when the learner's line that raised needed num_micro as a number and got a
    tracer (a jit that does not keep num_micro static); any other error goes through."""
    try:
        yield
    except CheckFailed:
        raise
    except Exception as exc:
        where = learner_location(exc.__traceback__, path)
        if "Tracer" not in str(exc) or "num_micro" not in where:
            raise
        fail(f"accumulated_grads raised {describe_exception(exc)}{where}: num_micro reached that line as a traced "
             "value, so it cannot shape an array or bound a loop. Your jit traces it: keep it static, "
             "`functools.partial(jax.jit, static_argnames=\"num_micro\")`, so each count compiles its own program.")


_C = np.sqrt(2 / np.pi)


def _numpy(params: dict[str, jax.Array], batch: dict[str, jax.Array]) -> tuple[float, dict[str, np.ndarray]]:
    """The full batch's loss and gradients by hand, in float64."""
    p = {k: np.asarray(v, np.float64) for k, v in params.items()}
    x, y = (np.asarray(batch[k], np.float64) for k in ("x", "y"))
    z = x @ p["w1"] + p["b1"]
    t = np.tanh(_C * (z + 0.044715 * z**3))
    a = 0.5 * z * (1 + t)
    slope = 0.5 * (1 + t) + 0.5 * z * (1 - t**2) * _C * (1 + 3 * 0.044715 * z**2)
    r = a @ p["w2"] - y
    g = 2 * r / r.size
    dz = np.outer(g, p["w2"]) * slope
    return float(np.mean(r**2)), {"w1": x.T @ dz, "b1": dz.sum(axis=0), "w2": a.T @ g}


def _off(got: np.ndarray, want: np.ndarray) -> float:
    """The largest error, as a fraction of the largest expected entry."""
    return float(np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-30))


def _why(got: np.ndarray, want: np.ndarray, num_micro: int) -> str:
    """A usual cause, when the error has one's shape."""
    if num_micro > 1 and _off(got, want * num_micro) < TOL:
        return (f" It is num_micro={num_micro} times the mean: the sum of the microbatch values. Divide the sums by "
                "num_micro once, after the loop.")
    return ""


def _micro_left_out(got: float, params: dict[str, jax.Array], batch: dict[str, jax.Array], num_micro: int) -> str:
    """When the loss is that of a run of microbatches short of all of them (averaged over that run, or its sum
    divided by num_micro), which ones it left out, in words; '' otherwise."""
    rows = int(batch["y"].shape[0])
    size = rows // num_micro
    for first in range(num_micro):
        for last in range(first, num_micro):
            count = last - first + 1
            if count == num_micro:
                continue
            part = {k: v[first * size:(last + 1) * size] for k, v in batch.items()}
            mean = _numpy(params, part)[0]
            for value, how in ((mean, "averaged over them"), (mean * count / num_micro, "summed and divided by "
                                                                                      "num_micro")):
                if abs(got - value) <= TOL * abs(value):
                    out = sorted(set(range(num_micro)) - set(range(first, last + 1)))
                    return (f" It is what microbatches {first} to {last} alone give (rows {first * size} to "
                            f"{(last + 1) * size - 1}), {how}: the loop leaves out microbatch(es) "
                            f"{', '.join(map(str, out))}. Every one of the num_micro microbatches counts: loop over "
                            "all of them.")
    return ""


@pytest.mark.judge
@pytest.mark.points(2)
def test_values(submission: ModuleType, submission_path: Path, rng: np.random.Generator) -> None:
    """`accumulated_grads` returns the full batch's float32 loss and gradients"""
    for rows, num_micro in ((2048, 4), (512, 1), (512, 8)):
        params, batch = _inputs(rng, rows)
        with _num_micro_explained(submission_path):  # as compiled before: jitted
            out = call_jitted(submission.accumulated_grads, params, batch, num_micro)
        head = f"num_micro={num_micro}, batch of {rows}: "
        check(isinstance(out, tuple | list) and len(out) == 2,
              f"{head}accumulated_grads returned {describe_value(out)}; it returns a pair (loss, grads).")
        loss, grads = out
        want_loss, want_grads = _numpy(params, batch)
        got = assert_is_array(loss, f"{head}the loss")
        check(got.shape == () and got.dtype == jnp.float32, f"{head}the loss is {describe_value(got)}; it is a "
                                                            "float32 scalar.")
        value = np.asarray(got, np.float64)
        if abs(value - want_loss) > TOL * abs(want_loss):
            why = (_why(value, np.float64(want_loss), num_micro)
                   or _micro_left_out(float(value), params, batch, num_micro))
            fail(f"{head}the loss is {float(value):.6g}, expected {want_loss:.6g} (the mean over all {rows} rows)."
                 f"{why}")
        check(isinstance(grads, dict) and set(grads) == set(want_grads),
              f"{head}grads are {describe_value(grads)}; they are a dict with the keys of params.")
        for key, want in want_grads.items():
            g = assert_is_array(grads[key], f"{head}grads[{key!r}]")
            if g.shape == want.shape and g.dtype == jnp.float32 and _off(np.asarray(g, np.float64), want) > TOL:
                fail(f"{head}grads[{key!r}] is off by {_off(np.asarray(g, np.float64), want):.1e} of its largest "
                     f"entry (allowed {TOL:g}).{_why(np.asarray(g, np.float64), want, num_micro)}")
            assert_array(g, want.astype(np.float32), name=f"{head}grads[{key!r}]", rtol=TOL,
                         atol=TOL * float(np.max(np.abs(want))))


def _all_at_once(m: Matmul, num_micro: int) -> bool:
    """A matmul over every microbatch at once: vmap's batched operands, of num_micro in front."""
    return m.batch == num_micro or m.lhs.split("[")[1].startswith(f"{num_micro}, ") or \
        m.out.split("[")[1].startswith(f"{num_micro}, ")


@pytest.mark.judge
@pytest.mark.points(2)
def test_loop_over_microbatches(submission: ModuleType, submission_path: Path) -> None:
    """Every matmul of the gradient runs inside one loop of num_micro trips (batch 2048, num_micro = 4)"""
    rows, num_micro = 2048, 4
    found = matmuls_of(_traced(submission, submission_path, num_micro, rows), path=submission_path)
    check(found, "accumulated_grads runs no matmul (no `dot_general` in its jaxpr): compute the model's x @ w1.")
    unknown = [m for m in found if m.times is None]
    if unknown:
        fail(f"accumulated_grads runs matmuls {unknown[0].unknown}, whose trip count is data: loop over the "
             "microbatches with `lax.scan` (or a `fori_loop` with Python-int bounds), whose trips JAX knows.")
    outside = [m for m in found if not m.loops]
    batched = [m for m in outside if _all_at_once(m, num_micro)]
    if batched:
        fail(f"{len(batched)} matmul(s) of the gradient work on all {num_micro} microbatches at once "
             f"({batched[0].describe()}, {line_text(batched[0].line, submission_path)}): that is `vmap` over the "
             "microbatches, which keeps all of them alive together. Loop over them, one microbatch per trip.")
    if outside:
        fail(f"{len(outside)} matmul(s) of the gradient run outside any loop "
             f"({line_text(outside[0].line, submission_path)}): each microbatch is written out (or the whole batch "
             f"is done in one go). Loop over the {num_micro} microbatches with one `lax.scan`.")
    for m in found:
        if m.times != num_micro:
            _, length, line = m.innermost_loop() or ("scan", None, None)
            fail(f"the loop at {line_text(line, submission_path)} runs {m.times} times for a batch of {rows} rows; "
                 f"it should run num_micro={num_micro} times, one microbatch of {rows // num_micro} consecutive rows "
                 f"per trip.{_trips_why(m.times or 0, rows, num_micro)}")


def _trips_why(times: int, rows: int, num_micro: int) -> str:
    """What a loop of `times` trips (not num_micro) most likely got wrong, in words."""
    if times == rows // num_micro:
        return (" It runs once per row of a microbatch: the batch was split the other way round. Split it as "
                "`x.reshape(num_micro, -1, ...)`, not `x.reshape(-1, num_micro, ...)`.")
    if times < num_micro:
        return (f" Its bounds stop {num_micro - times} trip(s) short (a `fori_loop` or `range` that ends before "
                f"num_micro, or starts after 0), so {num_micro - times} microbatch(es) never count. Loop over all "
                "num_micro of them.")
    return ""


@pytest.mark.judge
@pytest.mark.points(1)
def test_accumulator_float32(submission: ModuleType, submission_path: Path) -> None:
    """The running sums the loop carries are float32"""
    closed = _traced(submission, submission_path, 4, 512)
    for loop in loops_in(closed, path=submission_path):
        narrow = [t for t in loop.carry if t.split("[")[0] in ("float16", "bfloat16", "float8_e4m3fn", "float8_e5m2")]
        if narrow:
            fail(f"the loop at {line_text(loop.line, submission_path)} carries {', '.join(narrow)}: a running sum in "
                 "a 16-bit float keeps about 3 significant digits, so the small gradients of later microbatches "
                 "lose their low bits. Keep the sums in float32 (cast each gradient up before adding).")


# Equations that never copy data (views, bitcasts) or only hold other equations.
_NO_COPY = frozenset({"reshape", "squeeze", "expand_dims", "jit", "pjit", "closed_call", "remat2", "custom_jvp_call",
                      "custom_vjp_call", "scan", "while"})


def _batch_copies(closed: Any, rows: int, path: Path) -> list[EqnRuns]:
    """Equations outside any loop of this trace that make an array as large as the whole batch's x: a copy of
    the batch."""
    found = []
    for run in eqn_runs(closed, path=path):
        if run.primitive in _NO_COPY or any(e.primitive.name in ("scan", "while") for e in run.outer):
            continue
        # Half the batch or more: a peeled first microbatch leaves `micro[1:]`, all but one microbatch, as a copy.
        if any(2 * math.prod(getattr(v.aval, "shape", ())) >= rows * D for v in run.eqn.outvars):
            found.append(run)
    return found


@pytest.mark.judge
@pytest.mark.points(2)
def test_memory_scales_with_microbatch(submission: ModuleType, submission_path: Path) -> None:
    """Temporary memory depends on the microbatch, not the batch: 8192 rows in 16 need at most 1.1x 2048 in 4"""
    # Traced where the code runs, compiled here: the memory is what XLA makes of the traces.
    large_trace = _traced(submission, submission_path, 16, 8192)
    small = compile_program(_traced(submission, submission_path, 4, 2048), *_spec(2048)).temp_bytes
    large = compile_program(large_trace, *_spec(8192)).temp_bytes
    if large <= GROWTH * small:
        return
    head = (f"temporary memory grows with the batch: {size_text(small)} for batch 2048 in 4 microbatches, "
            f"{size_text(large)} for batch 8192 in 16, though B / num_micro = 512 rows both times. ")
    copies = _batch_copies(large_trace, 8192, submission_path)
    if copies:
        first = copies[0]
        out = first.eqn.outvars[0]
        share = math.prod(getattr(out.aval, "shape", ())) / (8192 * D)
        what = ("a copy of the whole batch" if share >= 1 else
                f"a copy of {share:.0%} of the batch (every microbatch but one: `micro[1:]` after a first microbatch "
                "computed before the loop copies the rest; start the loop from zero sums instead)")
        fail(head + f"At {line_text(first.line, submission_path)}, `{first.primitive}` makes "
             f"{type_text(out.aval)}, {what}, before the loop. `x.reshape(num_micro, -1, ...)` gives the "
             "microbatches, each of consecutive rows, without copying anything (or slice each microbatch inside "
             "the loop).")
    fail(head + "Something of every microbatch stays alive together: per-microbatch gradients stacked (`lax.map`, "
         "or the scan's `ys`) instead of summed in the carry, or all microbatches computed at once. Keep only a "
         "running sum.")


@pytest.mark.judge
@pytest.mark.points(1)
def test_compiles_once(submission: ModuleType, rng: np.random.Generator, submission_path: Path) -> None:
    """`accumulated_grads` is jitted once: 3 new batches of the same shape compile nothing"""
    cases = [(*_inputs(rng, 512), 4) for _ in range(4)]
    # The first call is the warm-up. The compiles are reported where the calls ran, and weighed here
    # against the programs' own texts: a call that runs a program no earlier call ran compiled it.
    with _num_micro_explained(submission_path):
        later = after_warmup(watched_calls(submission.accumulated_grads, cases, module=submission,
                                           path=submission_path))
    if later.compiles:
        why = f"; each call builds {max(later.built // 3, 1)} new jax.jit wrapper(s)" if later.built else ""
        fail(f"3 more calls with new batches compiled {later.compiles} time(s) ({later.names}){why}: build "
             "the jit once, at module scope, with num_micro static (`static_argnames=\"num_micro\"`), and call it.")
    # A function that cannot be traced (a host read before its jit) may still run a jit: not said of it.
    check(later.ran_jit,
          "accumulated_grads ran no jitted program of yours: its loop ran op by op. Jit it once at module "
          "scope, with num_micro static (`functools.partial(jax.jit, static_argnames=\"num_micro\")`).")
    check(not later.built,
          f"3 more calls of accumulated_grads built {later.built} new jax.jit wrapper(s): the jit is made inside "
          "the call, a new function object each time, which JAX must look up (or trace) again before it runs. "
          "Build it once, at module scope, with num_micro static.")
