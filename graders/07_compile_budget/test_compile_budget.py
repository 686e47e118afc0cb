"""Grader for `compile_budget`: values, the bucket rule, compiles per size and per temperature type, rows run."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import jax
import numpy as np
import pytest

from course.grading import (
    JitBuilds,
    JitCall,
    WatchedCall,
    assert_array,
    assert_is_array,
    check,
    fail,
    parameter_shapes,
    program_values,
    unreported_compiles,
    watched_calls,
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
    """Eight positive temperatures of mixed Python and NumPy types, none equal to the warm-up's 1.0."""
    f = [float(np.round(rng.uniform(1.1, 4.0), 3)) for _ in range(5)]
    k = [int(v) for v in rng.integers(2, 7, size=3)]
    return [f[0], k[0], np.float32(f[1]), np.float64(f[2]), np.int32(k[1]),
            np.array(f[3], np.float32), np.array(f[4]), np.int64(k[2])]


@pytest.mark.judge
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
        _programs_compute(submission, rng, n, t, name)


def _programs_compute(submission: ModuleType, rng: np.random.Generator, n: int, t: Any, name: str) -> None:
    """The result of the call just made must be what the programs it ran compute: the grader runs them itself on a
    fresh x (the same temperature: a Python number is taken as the call had it), apart from the process running the
    learner's code. A call that ran no program, or an ahead-of-time compiled one, is left to the compile checks."""
    x = _x(rng, n)
    values = program_values(
        submission.scaled_softmax, jax.device_put(x), t,
        made_outside=f"{name}: the result is not computed by the programs your call ran from `x` and the temperature: "
        "it is made outside them (by NumPy or Python), while they only stand beside. What a bucket saves is "
        "compiles of the programs that compute the softmax, so they must be the ones that make it.")
    if values is not None:
        assert_array(values[0], _softmax(x, t).astype(np.float32), name=f"{name}, as the programs your call ran "
                     "compute it, run by the grader on a fresh x", rtol=2e-5, atol=1e-6)


@pytest.mark.judge
@pytest.mark.points(1)
def test_bucket_rule(submission: ModuleType) -> None:
    """`bucket_size(n)` is at least n and at most max(16, 2n - 1), with at most 11 sizes for n in 1..1024"""
    buckets = {}
    for n in range(1, MAX_ROWS + 1):
        b = submission.bucket_size(n)
        check(isinstance(b, numbers.Integral) and not isinstance(b, bool),
              f"`bucket_size({n})` returned {b!r} ({type(b).__name__}); it must return an int.")
        b = int(b)
        check(b >= n, f"`bucket_size({n})` = {b} is smaller than {n}: the padded batch must hold all "
                      f"{n} rows.")
        buckets[n] = b
    too_big = next((n for n, b in buckets.items() if b > _limit(n)), None)
    if too_big is not None:
        fail(_too_big(too_big, buckets))
    sizes = set(buckets.values())
    check(len(sizes) <= MOST_PROGRAMS,
          f"`bucket_size` gives {len(sizes)} different sizes for n from 1 to {MAX_ROWS}, and each size "
          f"is a program to compile; powers of two need at most {MOST_PROGRAMS}.")


def _too_big(n: int, buckets: dict[int, int]) -> str:
    """Why a bucket wastes too much, shaped by the likely cause, seen from every bucket."""
    b = buckets[n]
    return (f"`bucket_size({n})` = {b}, more than max(16, 2n - 1) = {_limit(n)}: the padded batch "
            f"would do more than twice the work it needs. {_bucket_cause(n, buckets)}")


def _bucket_cause(n: int, buckets: dict[int, int]) -> str:
    """The likely reason `bucket_size(n)` is too big: a ladder of multiples, the bit-length slip, one size, a floor."""
    b = buckets[n]
    sizes = sorted(set(buckets.values()))
    step = sizes[0]
    if len(sizes) > 2 and sizes == [step * k for k in range(1, len(sizes) + 1)]:
        return (f"Your buckets are the multiples of {step}: a batch of 1 row is padded to {step}, and "
                f"{len(sizes)} sizes are {len(sizes)} programs. Round up to the next power of two instead.")
    if n & (n - 1) == 0 and b == 2 * n and n > 8:
        return (f"{n} is a power of two, so it is its own bucket; `1 << n.bit_length()` "
                "doubles exact powers of two. Use `1 << (n - 1).bit_length()`.")
    if b >= MAX_ROWS:
        return ("One giant bucket compiles once but makes every small batch pay for the "
                "largest one. Use the next power of two.")
    if n <= 8:
        return (f"Your smallest bucket is {b} rows, and a floor may be at most 16: a batch of 8 "
                "rows or fewer may be padded to 16, no further. Use `max(16, ...)`, not a larger floor.")
    return "Use the next power of two at or above n."


# The 17 batch sizes: every power-of-two range from 1 to 1000, exact powers of two and their
# neighbours. They are fixed, in a fixed order where small batches follow large ones, so no verdict
# depends on the seed; the other checks take their sizes from them: JAX's eager helpers (`jnp.pad`,
# slicing) compile once per shape, so sharing shapes compiles each helper once per grading.
SIZES = (1000, 1, 64, 17, 513, 2, 300, 31, 3, 700, 16, 65, 5, 127, 9, 33, 7)


def _shapes(program: JitCall) -> tuple[tuple[int, ...], ...]:
    """The shapes of a program's parameters, read from its compiled text (none when there is none)."""
    return parameter_shapes(program.compiled)


def _size(shapes: tuple[tuple[int, ...], ...]) -> int:
    """The number of elements of the largest of a program's parameters, 0 when it has none."""
    return max((math.prod(shape) for shape in shapes), default=0)


@dataclass(frozen=True)
class _Call:
    """One call of `scaled_softmax`: its batch, what it compiled and built (reported), and the programs it runs."""

    n: int
    watched: WatchedCall

    @property
    def compiles(self) -> int:
        """The compiles of the learner's functions reported for the call."""
        return len(self.watched.compiled)

    @property
    def builds(self) -> int:
        """The jax.jit wrappers the learner's file was reported to build during the call."""
        return self.watched.built

    @property
    def programs(self) -> tuple[JitCall, ...]:
        """The learner's jitted programs the call runs, with their texts (none known when it was not traced)."""
        return self.watched.programs

    @property
    def runs(self) -> list[tuple[str, tuple[tuple[int, ...], ...]]]:
        """Each program of the learner's the call runs, as `jit(name)` and its parameters' shapes: read from the
        programs' texts, or, for a call that could not be traced (an AOT executable's), as the executor recorded
        the programs that ran (`runs=True`; reported, the only account there is of such a call)."""
        if self.watched.traced:
            return [(f"jit({p.name})", _shapes(p)) for p in self.programs]
        return list(self.watched.ran)

    @property
    def rows(self) -> int:
        """The most rows any of its programs runs on (n when none is known)."""
        return max((_size(shapes) // WIDTH for _, shapes in self.runs), default=self.n)


def _watched(submission: ModuleType, path: Path, calls: list[tuple[Any, ...]], *,
             fresh_caches: bool = False, runs: bool = False) -> list[WatchedCall]:
    """Call `scaled_softmax(*args)` for each args where the learner's code runs, in order, with each call's
    compiles and jit builds (reported there) and the texts of the programs it runs (traced there, read here);
    with `fresh_caches`, JAX's caches are emptied there before the first call."""
    # One call at a time, so that each is traced right after it ran, in the state it left: traced after
    # every call, a function that keeps state (the largest batch padded so far) would show the program of
    # its last state for every call, not the one each call ran.
    return [w for i, args in enumerate(calls)
            for w in watched_calls(submission.scaled_softmax, [args], module=submission, path=path,
                                   fresh_caches=fresh_caches and i == 0, runs=runs)]


def _calls(submission: ModuleType, path: Path, xs: list[jax.Array], *, fresh_caches: bool = False,
           runs: bool = False) -> list[_Call]:
    """Call `scaled_softmax(x, 1.5)` for each x, with what each compiled, built and runs."""
    watched = _watched(submission, path, [(x, 1.5) for x in xs], fresh_caches=fresh_caches, runs=runs)
    return [_Call(int(x.shape[0]), w) for x, w in zip(xs, watched, strict=True)]


@pytest.mark.judge
@pytest.mark.points(2)
def test_compiles_per_batch_size(fresh_submission: ModuleType, rng: np.random.Generator, submission_path: Path) -> None:
    """17 batch sizes from 1 to 1000 compile your code at most 11 times, through a jit built once"""
    # The last call repeats the first shape: a program kept anywhere (module scope, a dict, an
    # AOT cache filled per bucket) is reused, so nothing is built or compiled for it again.
    # JAX's caches are emptied first: a jit of JAX's own function (`jax.jit(jax.nn.softmax)`) shares them
    # with every wrapper of it, so the programs earlier checks compiled would not compile again here.
    calls = _calls(fresh_submission, submission_path, [jax.device_put(_x(rng, n)) for n in (*SIZES, SIZES[0])],
                   fresh_caches=True)
    # The compiles and builds are reported where the calls ran; a call whose program text is new needed a
    # compile anyway, whatever was reported. (A call that could not be traced, an AOT executable's, say,
    # has no text: its report stands alone.)
    missing = unreported_compiles([c.watched for c in calls])
    if missing:
        fail(f"call {missing[0] + 1} of `scaled_softmax` (a batch of {_rows(calls[missing[0]].n)}) runs a program "
             "that no earlier call ran (its text differs), yet the record of that call says nothing was compiled: "
             "a new program is always compiled. Pad x to `bucket_size(n)` rows and call one jit built at import, "
             "so that the batches of one bucket run one program.")
    if message := _rebuilt(calls):
        fail(message)
    # Each distinct program of the learner's is at least one compile: the texts count the programs of the 17
    # batch sizes, the report their compiles, and the larger count is the one that must fit the budget.
    programs = {p.program for c in calls[:-1] for p in c.programs if p.program}
    total = max(sum(c.compiles for c in calls[:-1]), len(programs))
    if total <= MOST_PROGRAMS:
        return
    if calls[-1].compiles:
        fail(f"a second call with the same shape ({SIZES[0]}, {WIDTH}) compiled your code again: the "
             "jitted function is built anew on every call (a `jax.jit` of a fresh lambda or inner "
             "function is a new function to JAX). Build it once, at module scope, and call it.")
    rows = {c.rows for c in calls}
    head = (f"17 batch sizes from 1 to 1000 compiled your code {total} times; padded to "
            f"power-of-two buckets they need at most {MOST_PROGRAMS} programs. ")
    if len(rows) > MOST_PROGRAMS:
        fail(head + f"Your programs ran on {len(rows)} different row counts: pad x to "
             "`bucket_size(n)` rows before calling the jitted function.")
    fail(head + "Your programs ran on bucketed shapes, so something else is part of the cache key: "
         "is `n` (or the shape) a static argument, used to slice inside the jitted function? Slice "
         "the padding off after the call.")


def _rebuilt(calls: list[_Call]) -> str | None:
    """Why jits were built again for batches padded to rows already seen, or None if they were not."""
    builds = JitBuilds(tuple(c.builds for c in calls), tuple(f"batches padded to {c.rows} rows" for c in calls))
    repeats = builds.repeats()
    if not repeats:
        return None
    later = calls[repeats[0]]
    earlier = next(c for c in calls if c.rows == later.rows)
    if all(calls[i].n not in {c.n for c in calls[:i]} for i in repeats):
        return (f"batches of {_rows(earlier.n)} and of {_rows(later.n)} both ran on {later.rows} rows, yet the "
                "second built a new jitted function of its own: your jits are "
                "made per batch size (a dict or cache keyed by n), so every size is a new function for JAX to trace "
                "and compile. Key them by the bucket, `bucket_size(n)`, or build one jit at module scope.")
    return builds.message("scaled_softmax")


@pytest.mark.judge
@pytest.mark.points(2)
def test_temperature_types(submission: ModuleType, rng: np.random.Generator, submission_path: Path) -> None:
    """After a warm-up, 8 temperatures of mixed Python and NumPy types compile nothing"""
    n = 33  # a size of SIZES, so the eager helpers compile no new shape
    x = jax.device_put(_x(rng, n))
    temperatures = _temperatures(rng)
    # The first call is the warm-up, with a Python float. The compiles are reported where the calls ran,
    # and weighed here against the programs' own texts: a call that runs a program no earlier call ran compiled.
    watched = _watched(submission, submission_path, [(x, 1.0), *((x, t) for t in temperatures)])
    missing = unreported_compiles(watched)
    if missing:
        fail(f"after a warm-up with temperature 1.0, the call with temperature {_kind(temperatures[missing[0] - 1])} "
             "runs a program that no earlier call ran (its text differs), yet the record of that call says nothing "
             "was compiled: a new program is always compiled. Convert the temperature once, before the jitted "
             "call, with `jnp.asarray(temperature, jnp.float32)`, so that every temperature runs one program.")
    compiled = [t for t, w in zip(temperatures, watched[1:], strict=True) if w.compiled]
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


# Small batches after large ones, and sizes seen before: a program reused from a larger batch, or
# one size for every batch, shows on a later, smaller call (cached calls are recorded too).
ROWS_ORDER = (64, 1000, 1, 16, 17, 300, 2, 513, 9, 1000, 33)


@pytest.mark.judge
@pytest.mark.points(1)
def test_rows_run(fresh_submission: ModuleType, rng: np.random.Generator, submission_path: Path) -> None:
    """Each call runs its program on at most max(16, 2n - 1) rows, cached calls included"""
    # A module of its own: what earlier checks' calls left in the learner's caches would change the order
    # of batches this check reads (and what its message can say about a program reused from a larger one).
    submission = fresh_submission
    sizes = [*ROWS_ORDER, *(int(n) for n in rng.choice(SIZES, size=2, replace=False))]
    # The rows are read from the parameters of the programs each call runs, as traced at its arguments; a call
    # that could not be traced (an AOT executable's) has no text, and its programs are as the executor saw them.
    calls = _calls(submission, submission_path, [jax.device_put(_x(rng, n)) for n in sizes], runs=True)
    for i, call in enumerate(calls):
        check(call.runs, f"`scaled_softmax` on {_rows(call.n)} ran no jitted program of yours: the softmax "
                         "ran op by op. Compute it in a function jitted once at module scope, called "
                         "on the padded batch.")
        if call.rows > _limit(call.n):
            fail(_too_many_rows(submission, call, calls[:i]))


def _too_many_rows(submission: ModuleType, call: _Call, before: list[_Call]) -> str:
    """Why one call ran on more rows than its batch allows, from its own bucket and the calls before it."""
    n, rows = call.n, call.rows
    name, shapes = max(call.runs, key=lambda run: _size(run[1]))
    head = (f"for a batch of {_rows(n)}, `{name}` ran on arguments of shapes "
            f"{', '.join(str(s) for s in shapes)}: {rows} rows of work where at most max(16, 2n - 1) = "
            f"{_limit(n)} are allowed. ")
    bucket = submission.bucket_size(n)
    larger = next((c for c in before if c.rows == rows and c.n > n), None)
    if rows > bucket and larger is not None:
        return head + (f"Your `bucket_size({n})` is {bucket}, but the call reused the program of an earlier, "
                       f"larger batch ({_rows(larger.n)}): a batch always runs on its own bucket, even when a "
                       "bigger program is already compiled. Pad to `bucket_size(n)` rows and run that program.")
    if rows > bucket:
        return head + (f"Your `bucket_size({n})` is {bucket}, but the batch was padded to {rows} rows: pad to "
                       "`bucket_size(n)` rows, not to one size for every batch.")
    buckets = {m: int(submission.bucket_size(m)) for m in range(1, MAX_ROWS + 1)}
    return head + f"It is your bucket: `bucket_size({n})` = {bucket}. {_bucket_cause(n, buckets)}"
