"""Grader for `compile_budget`: values, the bucket rule, compiles per size and per temperature type, rows run."""

from __future__ import annotations

import numbers
from pathlib import Path
from types import ModuleType
from typing import Any

import jax
import numpy as np
import pytest

from course.grading import (
    CompileRecorder,
    RunRecorder,
    assert_array,
    assert_is_array,
    check,
    count_jit_builds,
    fail,
    own_function_names,
)

WIDTH = 64
MAX_ROWS = 1024
MOST_PROGRAMS = 11  # the powers of two from 1 to 1024


def _limit(n: int) -> int:
    """The most rows a batch of n rows may be padded to."""
    return max(16, 2 * n - 1)


def _rows(n: int) -> str:
    """'1 row', '16 rows'."""
    return f"{n} row" if n == 1 else f"{n} rows"


def _x(rng: np.random.Generator, n: int) -> np.ndarray:
    """Random float32 logits of shape (n, 64)."""
    return (rng.standard_normal((n, WIDTH)) * 3).astype(np.float32)


def _softmax(x: np.ndarray, temperature: Any) -> np.ndarray:
    """The expected result, in float64."""
    z = x.astype(np.float64) / float(np.asarray(temperature))
    z = np.exp(z - z.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


def _kind(t: Any) -> str:
    """A temperature written with its type, as a message shows it: `3 (Python int)`."""
    if isinstance(t, np.ndarray):
        return f"np.array({t.item():g}, dtype={t.dtype}) (a 0-d array)"
    if isinstance(t, np.generic):
        return f"np.{t.dtype}({t.item():g})"
    return f"{t!r} (Python {type(t).__name__})"


def _temperatures(rng: np.random.Generator) -> list[Any]:
    """Eight positive temperatures of mixed Python and NumPy types."""
    f = [float(np.round(rng.uniform(0.2, 4.0), 3)) for _ in range(5)]
    k = [int(v) for v in rng.integers(1, 6, size=3)]
    return [f[0], k[0], np.float32(f[1]), np.float64(f[2]), np.int32(k[1]),
            np.array(f[3], np.float32), np.array(f[4]), np.int64(k[2])]


@pytest.mark.points(2)
def test_values(submission: ModuleType, rng: np.random.Generator) -> None:
    """`scaled_softmax` returns softmax(x / temperature) with the padding sliced off"""
    temperatures = _temperatures(rng)
    for n, t in zip((1, 7, 16, 33, 300), temperatures, strict=False):  # sizes from SIZES
        x = _x(rng, n)
        name = f"`scaled_softmax(x, {_kind(t)})` for x of shape ({n}, {WIDTH})"
        out = assert_is_array(submission.scaled_softmax(jax.device_put(x), t), name)
        if out.ndim == 2 and out.shape[0] > n and out.shape[1] == WIDTH:
            fail(f"{name} has shape {tuple(out.shape)}: the {out.shape[0] - n} padding rows were not "
                 f"sliced off. Return the first {_rows(n)} of the padded result.")
        assert_array(out, _softmax(x, t).astype(np.float32), name=name, rtol=2e-5, atol=1e-6)


@pytest.mark.points(1)
def test_bucket_rule(submission: ModuleType) -> None:
    """`bucket_size(n)` is at least n and at most max(16, 2n - 1), with at most 11 sizes for n in 1..1024"""
    sizes = set()
    for n in range(1, MAX_ROWS + 1):
        b = submission.bucket_size(n)
        check(isinstance(b, numbers.Integral) and not isinstance(b, bool),
              f"`bucket_size({n})` returned {b!r} ({type(b).__name__}); it must return an int.")
        b = int(b)
        check(b >= n, f"`bucket_size({n})` = {b} is smaller than {n}: the padded batch must hold all "
                      f"{n} rows.")
        if b > _limit(n):
            fail(_too_big(n, b))
        sizes.add(b)
    check(len(sizes) <= MOST_PROGRAMS,
          f"`bucket_size` gives {len(sizes)} different sizes for n from 1 to {MAX_ROWS}, and each size "
          f"is a program to compile; powers of two need at most {MOST_PROGRAMS}.")


def _too_big(n: int, b: int) -> str:
    """Why a bucket wastes too much, shaped by the likely cause."""
    head = (f"`bucket_size({n})` = {b}, more than max(16, 2n - 1) = {_limit(n)}: the padded batch "
            "would do more than twice the work it needs. ")
    if n & (n - 1) == 0 and b == 2 * n:
        return head + (f"{n} is a power of two, so it is its own bucket; `1 << n.bit_length()` "
                       "doubles exact powers of two. Use `1 << (n - 1).bit_length()`.")
    if b >= MAX_ROWS:
        return head + ("One giant bucket compiles once but makes every small batch pay for the "
                       "largest one. Use the next power of two.")
    return head + "Use the next power of two at or above n."


# The 17 batch sizes: every power-of-two range from 1 to 1000, exact powers of two and their
# neighbours. They are fixed (their order is drawn) and the other checks take their sizes from
# them: JAX's eager helpers (`jnp.pad`, slicing) compile once per shape, so sharing shapes
# compiles each helper once per grading, and JAX's compilation cache serves them on a re-check.
SIZES = (1, 2, 3, 5, 7, 9, 16, 17, 31, 33, 64, 65, 127, 300, 513, 700, 1000)


@pytest.mark.points(2)
def test_compiles_per_batch_size(submission: ModuleType, rng: np.random.Generator, submission_path: Path) -> None:
    """17 batch sizes from 1 to 1000 compile your code at most 11 times, through a jit built once"""
    names = own_function_names(submission)
    sizes = [int(n) for n in rng.permutation(SIZES)]
    inputs = [jax.device_put(_x(rng, n)) for n in sizes + sizes[:1]]  # made before counting
    per_call = []
    with RunRecorder(names) as runs:
        for x in inputs[:-1]:
            with CompileRecorder(names) as rec:
                jax.block_until_ready(submission.scaled_softmax(x, 1.5))
            per_call.append(rec.count())
        # The last call repeats the first shape: a program kept anywhere (module scope, a dict, an
        # AOT cache filled per bucket) is reused, so nothing is built for it again.
        with CompileRecorder(names) as rec, count_jit_builds(submission_path) as built:
            jax.block_until_ready(submission.scaled_softmax(inputs[-1], 1.5))
        per_call.append(rec.count())
    if built[0]:
        fail(f"a second call with the shape ({sizes[0]}, {WIDTH}) built {built[0]} new jitted wrapper(s): a "
             "`jax.jit` made inside the function is a new object on every call, with caches of its own to look "
             "up and fill. Build it once, at module scope (or once per bucket, and keep it), and call it.")
    total = sum(per_call[:-1])
    if total <= MOST_PROGRAMS:
        return
    if per_call[-1]:
        fail(f"a second call with the same shape ({sizes[0]}, {WIDTH}) compiled your code again: the "
             "jitted function is built anew on every call (a `jax.jit` of a fresh lambda or inner "
             "function is a new function to JAX). Build it once, at module scope, and call it.")
    rows = {r.largest_size() // WIDTH for r in runs.runs}
    head = (f"17 batch sizes from 1 to 1000 compiled your code {total} times; padded to "
            f"power-of-two buckets they need at most {MOST_PROGRAMS} programs. ")
    if len(rows) > MOST_PROGRAMS:
        fail(head + f"Your programs ran on {len(rows)} different row counts: pad x to "
             "`bucket_size(n)` rows before calling the jitted function.")
    fail(head + "Your programs ran on bucketed shapes, so something else is part of the cache key: "
         "is `n` (or the shape) a static argument, used to slice inside the jitted function? Slice "
         "the padding off after the call.")


@pytest.mark.points(2)
def test_temperature_types(submission: ModuleType, rng: np.random.Generator) -> None:
    """After a warm-up, 8 temperatures of mixed Python and NumPy types compile nothing"""
    names = own_function_names(submission)
    n = int(rng.choice([n for n in SIZES if 16 < n < 100]))
    x = jax.device_put(_x(rng, n))
    temperatures = _temperatures(rng)
    jax.block_until_ready(submission.scaled_softmax(x, 1.0))  # the warm-up: a Python float
    compiled = []
    for t in temperatures:
        with CompileRecorder(names) as rec:
            jax.block_until_ready(submission.scaled_softmax(x, t))
        if rec.count():
            compiled.append(t)
    if not compiled:
        return
    if any(t is temperatures[0] for t in compiled):
        others = ", ".join(_kind(t) for t in compiled if t is not temperatures[0]) or "no other"
        fail(f"after a warm-up with temperature 1.0, a new value of the same type ({_kind(temperatures[0])}) "
             f"compiled your code again, and so did: {others}. The temperature's value is part of the "
             "cache key: it is a static argument, or turned into a Python constant inside the "
             "program. Pass it to the jitted function as an array, so it stays traced.")
    listed = ", ".join(_kind(t) for t in compiled)
    fail(f"after a warm-up with temperature 1.0 (a Python float), these temperatures compiled your "
         f"code again: {listed}. A Python float is a weakly typed float32, a Python int a weakly "
         "typed int32, a NumPy scalar a strong float32 or int32: each is a different cache key. "
         "Convert once, before the jitted call, with `jnp.asarray(temperature, jnp.float32)`.")


@pytest.mark.points(1)
def test_rows_run(submission: ModuleType, rng: np.random.Generator) -> None:
    """Each call runs its program on at most max(16, 2n - 1) rows"""
    names = own_function_names(submission)
    # 1 row must not run on 1024; 16 rows must not run on 32 (`1 << n.bit_length()`).
    cases = [(n, jax.device_put(_x(rng, n))) for n in (1, 16, 17, 64)]
    with RunRecorder(names) as rec:
        for n, x in cases:
            start = len(rec.runs)
            jax.block_until_ready(submission.scaled_softmax(x, 2.0))
            runs = rec.runs[start:]
            check(runs, f"`scaled_softmax` on {_rows(n)} ran no jitted program of yours: the softmax "
                        "ran op by op. Compute it in a function jitted once at module scope, called "
                        "on the padded batch.")
            for run in runs:
                rows = run.largest_size() // WIDTH
                if rows > _limit(n):
                    shapes = ", ".join(str(s) for s in run.shapes)
                    fail(f"for a batch of {_rows(n)}, `{run.fun_name}` ran on arguments of shapes "
                         f"{shapes}: {rows} rows of work where at most max(16, 2n - 1) = {_limit(n)} "
                         "are allowed. Pad to the next power of two, not to one size for every batch.")
