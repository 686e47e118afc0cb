"""Grader for `smem_scalar`: lengths live in SMEM, are read one scalar at a time, and stay data (no recompiles).

Values run under the strict TPU interpreter, whatever `interpret=` the learner passed. The memory
checks read the kernel's jaxpr, where each ref carries its memory space and each read its shape.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from types import ModuleType

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from course.grading import (
    CompileRecorder,
    KernelMemory,
    assert_array,
    assert_dtype,
    assert_is_array,
    assert_shape,
    check,
    fail,
    kernel_memory,
    own_function_names,
    pallas_calls,
    run_strict,
    tpu_interpret,
)

LANES = 128
TOL = {"rtol": 1e-5, "atol": 1e-4}


def _lengths(rng: np.random.Generator, batch: int, time: int) -> np.ndarray:
    """Random lengths in [0, time], with 0 and `time` among them when there is room."""
    lengths = rng.integers(0, time + 1, size=batch)
    if batch >= 2:
        at = rng.choice(batch, size=2, replace=False)
        lengths[at] = (0, time)
    return lengths.astype(np.int32)


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


def _row_message(b: int, n: int, got: np.ndarray, xb: np.ndarray, lengths: np.ndarray) -> str:
    """Say what row b of the result holds instead of the sum of its first n rows."""
    if np.isnan(got).any():
        return (f"row {b} of the result is NaN: nothing wrote it, and under the strict TPU "
                "interpreter memory nothing wrote reads as NaN. Write every row of the output.")
    k = _rows_summed(xb, got)
    if k is None:
        return (f"row {b} (lengths[{b}] = {n}) is not the sum of any number of leading rows of "
                f"x[{b}]: sum exactly the rows t < lengths[{b}], the others masked to zero.")
    why = ""
    if k == n + 1:
        why = " One row too many: is the mask `t <= lengths[b]` where `t < lengths[b]` belongs?"
    elif k == lengths[0] and b != 0:
        why = " That is lengths[0]: does every row read `lengths_ref[0]` instead of `lengths_ref[b]`?"
    return f"row {b} summed the first {k} rows of x[{b}], but lengths[{b}] = {n}.{why}"


def _check_values(got: object, x: np.ndarray, lengths: np.ndarray, name: str) -> None:
    """A real float32 (B, 128) array whose row b sums the first lengths[b] rows of x[b]."""
    arr = assert_is_array(got, name)
    want = _expected(x, lengths)
    assert_dtype(arr, np.float32, name)
    assert_shape(arr, want.shape, name)
    values = np.asarray(arr)
    for b in range(len(lengths)):
        if not np.allclose(values[b], want[b], **TOL):
            fail(f"{name} is wrong: {_row_message(b, int(lengths[b]), values[b], x[b], lengths)}")
    assert_array(arr, want, name=name, **TOL)


def _memory(submission: ModuleType, path: Path) -> KernelMemory:
    """The refs and accesses of the one `pallas_call` in `masked_row_sum`, traced for (4, 16, 128)."""
    x, lengths = jnp.zeros((4, 16, LANES), jnp.float32), np.array([0, 16, 3, 9], np.int32)
    # Only x is traced; lengths stay concrete (NumPy), so a wrapper that turns them into Python
    # ints still shows its kernel here: the check about compiles is the one for that mistake.
    calls = pallas_calls(lambda x: submission.masked_row_sum(x, lengths), x, path=path)
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


@pytest.mark.points(2)
def test_values(submission: ModuleType, rng: np.random.Generator) -> None:
    """`masked_row_sum` sums the first `lengths[b]` rows of each `x[b]`, under the strict TPU interpreter"""
    cases = [(1, 8), (int(rng.integers(3, 6)), 8 * int(rng.integers(2, 5))), (8, 64)]
    for batch, time in cases:
        x, lengths = _draw(rng, batch, time), _lengths(rng, batch, time)
        got = run_strict(submission.masked_row_sum, jnp.asarray(x), jnp.asarray(lengths))
        _check_values(got, x, lengths, f"masked_row_sum(x, lengths) for x of shape {(batch, time, LANES)} "
                                       f"and lengths {lengths.tolist()}")


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
    fail("the kernel never reads an integer from SMEM, so the lengths do not reach it as data. "
         "Pass `lengths` by scalar prefetch and read `lengths_ref[b]` in the kernel. (A mask built "
         "in the wrapper is a second pass over x in HBM; lengths baked in as Python numbers "
         "compile a new kernel for each length.)")


@pytest.mark.points(2)
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


@pytest.mark.points(2)
def test_new_lengths_compile_nothing(submission: ModuleType, rng: np.random.Generator,
                                     submission_path: Path) -> None:
    """After a warm-up, three new length vectors compile nothing: the lengths stay data"""
    batch, time = 4, 32
    x = jnp.asarray(_draw(rng, batch, time))
    vectors = [_lengths(rng, batch, time) for _ in range(4)]
    for cap, vector in zip((time, 8, 16, 24), vectors, strict=True):
        vector[:] = np.minimum(vector, cap)  # new maxima too, so a length-dependent shape shows
        vector[0] = cap
    recorder = CompileRecorder(names=own_function_names(submission), path=str(submission_path))
    with tpu_interpret():
        jax.block_until_ready(submission.masked_row_sum(x, jnp.asarray(vectors[0])))
        with recorder:
            for vector in vectors[1:]:
                jax.block_until_ready(submission.masked_row_sum(x, jnp.asarray(vector)))
    names = recorder.fun_names()
    if not names:
        return
    if "jit(wrapped)" in names:
        advice = ("`pl.pallas_call(...)(...)` called outside `jax.jit` builds and compiles its "
                  "kernel on every call: jit `masked_row_sum` once, at module scope.")
    else:
        advice = ("A compile per length vector means the lengths became part of the program (a "
                  "Python int, a static argument, a tuple, or a shape cut from them). Keep them an "
                  "int32 array that reaches the kernel by scalar prefetch.")
    counted = ", ".join(f"{name} x{n}" if n > 1 else name for name, n in Counter(names).items())
    fail(f"after a warm-up call, three calls with new lengths and the same shapes compiled "
         f"{len(names)} time(s) ({counted}). {advice}")
