"""Grader for `smem_scalar`: lengths live in SMEM, are read one scalar at a time, and stay data (no recompiles).

Values run under the strict TPU interpreter, whatever `interpret=` the learner passed. The memory
checks read the kernel's jaxpr, where each ref carries its memory space and each read its shape.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from course.grading import (
    KernelMemory,
    assert_array,
    assert_dtype,
    assert_is_array,
    assert_lowers_for_tpu,
    assert_shape,
    check,
    fail,
    kernel_memory,
    matches_name,
    pallas_calls,
    strict_values,
    tpu_interpret,
    traced,
)
from course.grading.judge.source import defined_names
from course.grading.observe.calls.warmup import after_warmup, watched_calls

LANES = 128
# The name an un-jitted `pallas_call` compiles under, from the learner's call: Pallas's, but their doing.
PALLAS_WRAPPER = "jit(wrapped)"
TOL = {"rtol": 1e-5, "atol": 1e-4}


def _lengths(rng: np.random.Generator, batch: int, time: int) -> np.ndarray:
    """Random lengths in [0, time], with 0 and `time` among them when there is room."""
    lengths = rng.integers(0, time + 1, size=batch)
    if batch >= 2:
        at = rng.choice(batch, size=2, replace=False)
        lengths[at] = (0, time)
    return lengths.astype(np.int32)


# Fixed lengths that tell the usual mistakes apart, always graded first: lengths[0] is neither 0
# nor T and differs from the others (a kernel reading `lengths_ref[0]` shows), 0 and T are there
# (a `<=` mask, a sum seeded with row 0), and rows before the last are not empty (a step that
# rewrites the whole output block wipes them). Random lengths follow on the same shapes, so they
# cost no compile of a correct kernel, and one shape is drawn.
FIXED = ((4, 16, (5, 0, 16, 9)), (1, 8, (3,)), (8, 64, (37, 64, 0, 1, 63, 8, 20, 5)))


def _cases(rng: np.random.Generator) -> list[tuple[int, int, tuple[int, ...] | None]]:
    """(batch, time, lengths or None for random ones): the fixed cases, then random draws."""
    drawn = (int(rng.integers(2, 6)), 8 * int(rng.integers(2, 5)), None)
    return [*FIXED, (4, 16, None), (8, 64, None), drawn]


def _draw(rng: np.random.Generator, batch: int, time: int) -> np.ndarray:
    """Random float32 x of shape (batch, time, 128)."""
    return rng.standard_normal((batch, time, LANES)).astype(np.float32)


def _expected(x: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """out[b] = x[b, :lengths[b]].sum(0), summed in float64."""
    return np.stack([x[b, : lengths[b]].sum(0, dtype=np.float64) for b in range(len(lengths))]).astype(np.float32)


def _rows_summed(xb: np.ndarray, got: np.ndarray) -> int | None:
    """How many leading rows of `xb` add up to `got`, or None when no prefix does."""
    prefixes = np.concatenate([np.zeros((1, xb.shape[1])), np.cumsum(xb, axis=0, dtype=np.float64)])
    close = [k for k in range(len(prefixes)) if np.allclose(got, prefixes[k], **TOL)]
    return close[0] if close else None


def _rows_text(rows: list[int]) -> str:
    """'row 2' or 'rows 0, 1 and 3'."""
    if len(rows) == 1:
        return f"row {rows[0]}"
    return "rows " + ", ".join(map(str, rows[:-1])) + f" and {rows[-1]}"


def _pattern(bad: list[int], summed: list[int | None], lengths: np.ndarray, time: int) -> str | None:
    """The one mistake that explains every wrong row, when the rows summed fit a usual one."""
    n = [int(v) for v in lengths]
    if any(k is None for k in summed):
        return None
    if len(set(n)) > 1 and all(k == min(n[0], time) for k in summed):
        return (f"every row summed lengths[0] = {n[0]} rows: does every grid step read "
                "`lengths_ref[0]` instead of `lengths_ref[b]`, its own row's length?")
    if all(k == min(v + 1, time) for k, v in zip(summed, n, strict=True)):
        return "every row summed one row too many: is the mask `t <= lengths[b]` where `t < lengths[b]` belongs?"
    if all(n[b] == 0 and summed[b] == 1 for b in bad):
        held = (f"row {bad[0]} has length 0 but holds x[{bad[0]}, 0]" if len(bad) == 1
                else f"{_rows_text(bad)} have length 0 but each holds its first row of x")
        return (f"{held}: the sum starts from the first row instead of from zero, so an empty row "
                "still adds one. Start from zeros and add the rows t < lengths[b].")
    if all(summed[b] == 0 and n[b] > 0 for b in bad) and max(bad) < len(n) - 1:
        return (f"{_rows_text(bad)} hold 0 although their lengths are {[n[b] for b in bad]}, while "
                "the last row is right: a later grid step wiped them. An output block whose index "
                "map does not move stays in VMEM for the whole grid and is written back once, at "
                "the end, so each step must write only its own row (`o_ref[pl.ds(b, 1), :] = ...`), "
                "never the whole block.")
    return None


def _values_message(values: np.ndarray, x: np.ndarray, lengths: np.ndarray) -> str:
    """What the result holds instead of each row's masked sum, in terms of the usual mistakes."""
    want = _expected(x, lengths)
    bad = [b for b in range(len(lengths)) if not np.allclose(values[b], want[b], **TOL)]
    nan = [b for b in bad if np.isnan(values[b]).any()]
    if nan:
        return (f"{_rows_text(nan)} of the result hold NaN: nothing wrote them, and under the strict "
                "TPU interpreter memory nothing wrote reads as NaN. Write every row of the output.")
    summed = [_rows_summed(x[b], values[b]) for b in range(len(lengths))]
    pattern = _pattern(bad, summed, lengths, x.shape[1])
    if pattern:
        return pattern
    b, n, k = bad[0], int(lengths[bad[0]]), summed[bad[0]]
    if k is None:
        return (f"row {b} (lengths[{b}] = {n}) is not the sum of any number of leading rows of "
                f"x[{b}]: sum exactly the rows t < lengths[{b}], the others masked to zero.")
    return f"row {b} summed the first {k} rows of x[{b}], but lengths[{b}] = {n}."


def _check_values(got: object, x: np.ndarray, lengths: np.ndarray, name: str) -> None:
    """A real float32 (B, 128) array whose row b sums the first lengths[b] rows of x[b]."""
    arr = assert_is_array(got, name)
    want = _expected(x, lengths)
    assert_dtype(arr, np.float32, name)
    assert_shape(arr, want.shape, name)
    values = np.asarray(arr)
    if not np.allclose(values, want, **TOL):
        fail(f"{name} is wrong: {_values_message(values, x, lengths)}")
    assert_array(arr, want, name=name, **TOL)


def _trace(submission: ModuleType, x: jax.Array, lengths: np.ndarray) -> Any:
    """The trace of `masked_row_sum(x, lengths)`, which the judge reads and holds to a plain call at the same
    arguments (a file that shows one kernel to the trace and runs another fails).

    Only x is traced; lengths stay concrete (NumPy), so a wrapper that turns them into Python ints still shows
    its kernel here: the check about compiles is the one for that mistake.
    """
    return traced(submission.masked_row_sum, x, static=(lengths,))


def _memory(submission: ModuleType, path: Path) -> KernelMemory:
    """The refs and accesses of the one `pallas_call` in `masked_row_sum`, traced for (4, 16, 128)."""
    x, lengths = jnp.zeros((4, 16, LANES), jnp.float32), np.array([0, 16, 3, 9], np.int32)
    calls = pallas_calls(_trace(submission, x, lengths), path=path)
    check(calls, "`masked_row_sum` makes no `pl.pallas_call`: the masked sum belongs in "
                 "`masked_row_sum_kernel`, called through `pl.pallas_call`.")
    check(len(calls) == 1, f"`masked_row_sum` makes {len(calls)} `pallas_call`s; one is enough.")
    return kernel_memory(calls[0])


def _where(lines: list[int | None]) -> str:
    """'line 12' or 'lines 12, 14' for the known lines, '' when none is known."""
    known = sorted({line for line in lines if line})
    if not known:
        return "the kernel"
    return f"line {known[0]}" if len(known) == 1 else f"lines {', '.join(map(str, known))}"


@pytest.mark.judge
@pytest.mark.points(2)
def test_values(submission: ModuleType, rng: np.random.Generator) -> None:
    """`masked_row_sum` sums the first `lengths[b]` rows of each `x[b]`, under the strict TPU interpreter"""
    for batch, time, fixed in _cases(rng):
        x = _draw(rng, batch, time)
        lengths = _lengths(rng, batch, time) if fixed is None else np.asarray(fixed, np.int32)
        got = strict_values(submission.masked_row_sum, jnp.asarray(x), jnp.asarray(lengths))
        _check_values(got, x, lengths, f"masked_row_sum(x, lengths) for x of shape {(batch, time, LANES)} "
                                       f"and lengths {lengths.tolist()}")


@pytest.mark.judge
def test_lengths_in_smem(submission: ModuleType, submission_path: Path) -> None:
    """The kernel reads its integer lengths from an SMEM ref (scalar prefetch, or an SMEM spec)"""
    mem = _memory(submission, submission_path)
    int_loads = [a for a in mem.accesses if a.kind == "load" and a.ref.dtype is not None
                 and np.issubdtype(a.ref.dtype, np.integer)]
    if any(a.space == "smem" for a in int_loads):
        return
    if int_loads:
        fail(f"{_where([a.line for a in int_loads])} reads lengths from {int_loads[0].ref.describe()}. "
             "Lengths are control data: pass them by scalar prefetch "
             "(`pltpu.PrefetchScalarGridSpec(num_scalar_prefetch=1, ...)`) so they sit in SMEM "
             "before the grid runs and each read is a scalar load.")
    floats = [a for a in mem.smem_reads() if a.ref.dtype is not None and np.issubdtype(a.ref.dtype, np.floating)]
    if floats:
        fail(f"{_where([a.line for a in floats])} reads the lengths from {floats[0].ref.describe()}, a table "
             "of floats. Lengths are counts: keep the table int32 (pass `lengths` as it is), so a "
             "length can bound a loop, steer `pl.when` or pick a block in an index map.")
    fail("the kernel never reads an integer from SMEM, so the lengths do not reach it as data. "
         "Pass `lengths` by scalar prefetch and read `lengths_ref[b]` in the kernel. (A mask built "
         "in the wrapper is a second pass over x in HBM; lengths baked in as Python numbers "
         "compile a new kernel for each length.)")


@pytest.mark.points(2)
@pytest.mark.judge
def test_scalar_reads(submission: ModuleType, submission_path: Path) -> None:
    """Every read of SMEM is one scalar (shape `()`), such as `lengths_ref[b]`"""
    mem = _memory(submission, submission_path)
    wide = [a for a in mem.smem_reads() if a.shape != ()]
    if wide:
        first = wide[0]
        fail(f"{_where([a.line for a in wide])} reads {first.ref.describe()} as a value of shape "
             f"{first.shape}, not one scalar. Only a rank-0 read runs on the scalar unit; a slice "
             "(`lengths_ref[pl.ds(b, 1)]`), the whole table, or a row of a 2-D table is a vector, "
             "padded to a full tile of vector work. Read `lengths_ref[b]` from a 1-D table.")


def _learners(names: list[str], own: set[str]) -> list[str]:
    """The compiles of the learner's programs: their own functions', and an un-jitted `pallas_call`'s.

    A recorder given the learner's file also hears JAX's eager helpers (`jit(dynamic_slice)` for a
    slice outside `jax.jit`); those are JAX's programs, not the learner's, and are not counted.
    """
    return [n for n in names if matches_name(n, frozenset(own)) or n == PALLAS_WRAPPER]


def _compile_advice(names: list[str], built: int, runs: list[tuple[str, tuple[tuple[int, ...], ...]]]) -> str:
    """Why the learner's programs compiled again: no jit, a jit built per call, new shapes, or static lengths."""
    if PALLAS_WRAPPER in names:
        return ("`pl.pallas_call(...)(...)` called outside `jax.jit` builds and compiles its "
                "kernel on every call: jit `masked_row_sum` once, at module scope.")
    if built:
        return (f"the three calls built {built} new `jax.jit` wrapper(s), each around a function "
                "made anew (a lambda, a closure, a `functools.partial`), so nothing compiled "
                "before could be reused. Build the jitted function once, at module scope, and "
                "call that same object every time.")
    shapes = sorted({max(shapes, key=len) for name, shapes in runs if name in names and shapes})
    if len(shapes) > 1:
        shown = ", then ".join(str(s) for s in shapes[:3])
        return (f"the compiled program ran on a new shape for each length vector ({shown}): a shape "
                "cut from the lengths (`int(lengths.max())`, a slice by a length) is part of the "
                "program. Keep x's shape, and mask the rows inside the kernel.")
    return ("a compile per length vector means the lengths became part of the program (a Python "
            "int, a static argument or a tuple of them). Keep them an int32 array that reaches the "
            "kernel by scalar prefetch.")


@pytest.mark.judge
@pytest.mark.points(2)
def test_new_lengths_compile_nothing(fresh_submission: ModuleType, rng: np.random.Generator,
                                     submission_path: Path) -> None:
    """After a warm-up, three new length vectors compile nothing and build no new jit: the lengths stay data"""
    # A module of its own: a shape an earlier check compiled would hide one of the three compiles.
    batch, time = 4, 32
    x = jnp.asarray(_draw(rng, batch, time))
    vectors = [_lengths(rng, batch, time) for _ in range(4)]
    for cap, vector in zip((time, 8, 16, 24), vectors, strict=True):
        vector[:] = np.minimum(vector, cap)  # new maxima too, so a length-dependent shape shows
        vector[0] = cap
    calls = [(x, jnp.asarray(vector)) for vector in vectors]
    with tpu_interpret():  # the calls run, and are traced, under the interpreter where the learner's code runs
        watched = watched_calls(fresh_submission.masked_row_sum, calls, module=fresh_submission,
                                path=submission_path, runs=True)
    later = after_warmup(watched)
    # The learner's names are read here, from the graded text: the compiles reported are kept only if theirs.
    names = _learners(list(later.compiled), defined_names(submission_path))
    if later.unreported and not names:
        fail("after a warm-up call, a call with new lengths and the same shapes runs a program that no earlier "
             "call ran (its text differs), yet the record of that call says nothing was compiled: a new program is "
             "always compiled. The lengths became part of the program; keep them an int32 array that reaches the "
             "kernel by scalar prefetch.")
    if not names and later.built:
        fail(f"after a warm-up call, three calls with new lengths compiled nothing, but built {later.built} new "
             "`jax.jit` wrapper(s): `masked_row_sum` makes its jit inside the call, and JAX finds the program in "
             "its caches only because the function wrapped is the same each time; every call still builds a "
             "wrapper and looks the program up again. Jit `masked_row_sum` once, at module scope (`@jax.jit`).")
    if not names:
        return
    runs = [run for w in watched[1:] for run in w.ran]
    counted = ", ".join(f"{name} x{n}" if n > 1 else name for name, n in Counter(names).items())
    fail(f"after a warm-up call, three calls with new lengths and the same shapes compiled your "
         f"code {len(names)} time(s) ({counted}): {_compile_advice(names, later.built, runs)}")


@pytest.mark.judge
def test_lowers_for_tpu(submission: ModuleType, submission_path: Path) -> None:
    """Every kernel lowers for a TPU, as the chip would compile it"""
    for x, lengths in ((jnp.zeros((4, 16, LANES), jnp.float32), np.array([0, 16, 3, 9], np.int32)),
                       (jnp.zeros((2, 40, 2 * LANES), jnp.float32), np.array([40, 17], np.int32))):
        assert_lowers_for_tpu(_trace(submission, x, lengths), name="masked_row_sum", path=submission_path)
