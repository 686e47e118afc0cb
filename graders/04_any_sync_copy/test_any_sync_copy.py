"""Grader for `any_sync_copy`: x stays in HBM, is copied into VMEM by a waited DMA, and only the copy is indexed.

Every kernel runs under the strict TPU interpreter, whatever `interpret=` the learner passed:
there an HBM ref cannot be indexed, a DMA lands at its wait, and fresh memory reads as NaN.
The memory checks read the kernel's jaxpr, where each ref carries its memory space.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from course.grading import (
    HBM_SPACES,
    KernelMemory,
    RefInfo,
    assert_array,
    assert_lowers_for_tpu,
    check,
    fail,
    hbm_access_message,
    interpreter_failure,
    kernel_memory,
    pallas_calls,
    run_strict,
    silent_wait_message,
    strict_values,
)

F32, BF16 = jnp.float32, jnp.bfloat16
# Spaces a DMA may land in to be indexed: VMEM, or a blocked operand (which is VMEM on a TPU).
VMEM_SPACES = ("vmem", "default")


# Shapes that expose the usual mistakes, always graded: the smallest tile, and shapes with several
# 128-column strips and several row tiles in each dtype (a copy of one tile, one strip or one
# row block, or one wait for many copies, leaves part of these uncopied). The static checks trace
# at the same shapes, so a NaN in the values and the DMA checks speak of one kernel.
FIXED_CASES: tuple[tuple[tuple[int, int], Any], ...] = (((8, 128), F32), ((32, 384), F32), ((32, 256), BF16))
TRACED = FIXED_CASES[1:]


def _cases(rng: np.random.Generator) -> list[tuple[tuple[int, int], Any]]:
    """The fixed shapes first, then one shape (8k, 128m) in a dtype drawn at random."""
    drawn = (8 * int(rng.integers(1, 5)), 128 * int(rng.integers(1, 4)))
    return [*FIXED_CASES, (drawn, F32 if rng.integers(2) else BF16)]


def _draw(rng: np.random.Generator, shape: tuple[int, int], dtype: Any) -> jax.Array:
    """Random values of `shape` in `dtype`, drawn from this check's generator."""
    return jnp.asarray(rng.standard_normal(shape).astype(np.float32)).astype(dtype)


def _memory(submission: ModuleType, x: jax.Array, path: Path) -> KernelMemory:
    """The refs, accesses and DMAs of the one `pallas_call` that `scale_shift(x)` makes."""
    calls = pallas_calls(submission.scale_shift, x, path=path)
    check(calls, "`scale_shift` makes no `pl.pallas_call`: the work belongs in `scale_shift_kernel`, "
                 "called through `pl.pallas_call`.")
    check(len(calls) == 1, f"`scale_shift` makes {len(calls)} `pallas_call`s; one is enough.")
    return kernel_memory(calls[0])


def _input(mem: KernelMemory) -> RefInfo:
    """The ref that receives `x`, the kernel's first operand."""
    return mem.args()[mem.call.num_index]


def _run(submission: ModuleType, x: jax.Array) -> Any:
    """`scale_shift(x)` under the strict interpreter; what the interpreter refused, in a sentence.

    The values check runs in the judge, which never reads the kernel: a wait that nothing will
    signal raises at once under the strict interpreter, and the checks that read the kernel name
    the line of each mistake (`test_no_direct_access`, `test_dma_into_vmem`, `test_dmas_waited`).
    """
    try:
        return strict_values(submission.scale_shift, x)
    except Exception as exc:
        head = f"for x of {x.dtype.name}{list(x.shape)}"
        silent = silent_wait_message(exc)
        if silent:
            fail(f"{head}: {silent}")
        if "cannot be referenced directly" in str(exc):
            fail(f"{head}, the strict TPU interpreter refused your kernel: it indexes an HBM (`pl.ANY`) ref "
                 "directly, which a TPU cannot do. Copy it into a VMEM buffer with `pltpu.sync_copy` and "
                 "index the copy.")
        inner = interpreter_failure(exc)
        if inner is None:
            raise  # the learner's own error: the platform reports it with their line
        inner = inner.rstrip(":")
        dtypes = (" A bare AssertionError there is a DMA between two dtypes: a DMA copies bytes and cannot "
                  "convert them, so give the buffer the input's dtype." if inner == "AssertionError" else "")
        fail(f"{head}, the TPU interpreter stopped your kernel with `{inner}`.{dtypes}")


def _nan_message(name: str, got: np.ndarray) -> str:
    """Where the NaNs are, and why: memory that no copy or store ever filled."""
    nan = np.isnan(got)
    rows, cols = np.flatnonzero(nan.any(axis=1)), np.flatnonzero(nan.any(axis=0))
    return (f"{name} has {int(nan.sum())} NaN element(s) of {got.size}, in rows {rows[0]} to {rows[-1]} "
            f"and columns {cols[0]} to {cols[-1]}. Under the strict TPU interpreter fresh memory reads as NaN, "
            "so these come from memory that nothing was copied into: part of `x` was never copied, a copy "
            "was read before its wait, or part of the output was never written. Copy the whole of `x` (its "
            "shape varies, so take shapes from the refs, not from constants), wait for each copy before "
            "reading it, and write every element of the output.")


def _parts_equal(got: np.ndarray, k: int, want: np.ndarray, w: int, axis: int, size: int, tol: float) -> bool:
    """Whether the `size`-wide part of `got` at `k` along `axis` equals the part of `want` at `w`."""
    return np.allclose(np.take(got, range(k, k + size), axis=axis), np.take(want, range(w, w + size), axis=axis),
                       rtol=tol, atol=tol)


def _repeated_part(got: np.ndarray, want: np.ndarray, tol: float) -> str | None:
    """A sentence when every wrong 8-row band (or 128-column strip) of `got` holds the result of one other."""
    for axis, size, word in ((0, 8, "rows"), (1, 128, "columns")):
        parts = range(0, got.shape[axis], size)
        wrong = [k for k in parts if not _parts_equal(got, k, want, k, axis, size, tol)]
        sources = {next((w for w in parts if _parts_equal(got, k, want, w, axis, size, tol)), None) for k in wrong}
        if wrong and None not in sources and len(sources) == 1:
            (src,) = sources
            shown = ", ".join(f"{k} to {k + size - 1}" for k in wrong[:3]) + (" and more" if len(wrong) > 3 else "")
            return (f"its {word} {shown} hold the result for {word} {src} to {src + size - 1} instead of "
                    f"their own: the same part of `x` is copied each time. Offset each copy by its own "
                    "position (in a grid, `pl.program_id(0)` times the tile's size).")
    return None


@pytest.mark.judge
@pytest.mark.points(2)
def test_values(submission: ModuleType, rng: np.random.Generator) -> None:
    """`scale_shift` returns 2 * x + 1 under the strict TPU interpreter, for float32 and bfloat16"""
    for shape, dtype in _cases(rng):
        x = _draw(rng, shape, dtype)
        want = (np.asarray(x, np.float32) * 2 + 1).astype(jnp.dtype(dtype))
        got = _run(submission, x)
        name = f"scale_shift(x) for {jnp.dtype(dtype).name}{list(shape)}"
        if isinstance(got, jax.Array) and got.shape == want.shape and jnp.issubdtype(got.dtype, jnp.floating):
            values = np.asarray(got, np.float32)
            if np.isnan(values).any():
                fail(_nan_message(name, values))
        tol = 1e-2 if dtype == BF16 else 1e-6
        if isinstance(got, jax.Array) and got.shape == want.shape and got.dtype == want.dtype:
            repeated = _repeated_part(np.asarray(got, np.float32), np.asarray(want, np.float32), tol)
            check(repeated is None, f"{name} is wrong: {repeated}")
        assert_array(got, want, name=name, rtol=tol, atol=tol)


@pytest.mark.judge
def test_input_in_hbm(submission: ModuleType, submission_path: Path) -> None:
    """The kernel's first operand stays in HBM: its spec is `pl.BlockSpec(memory_space=pl.ANY)`"""
    for shape, dtype in TRACED:
        ref = _input(_memory(submission, jnp.ones(shape, dtype), submission_path))
        check(ref.space in HBM_SPACES,
              f"the kernel receives `x` as {ref.describe()}, so Pallas has already copied it into "
              "VMEM for you and there is nothing left to move by hand. Give the input "
              "`pl.BlockSpec(memory_space=pl.ANY)` so it stays in HBM.")


@pytest.mark.judge
def test_no_direct_access(submission: ModuleType, submission_path: Path) -> None:
    """No load or store touches an HBM (ANY) ref: the kernel indexes only VMEM copies"""
    for shape, dtype in TRACED:
        mem = _memory(submission, jnp.ones(shape, dtype), submission_path)
        direct = mem.in_space(*HBM_SPACES)
        check(not direct, hbm_access_message(direct[0]) if direct else "")


@pytest.mark.judge
def test_dma_into_vmem(submission: ModuleType, submission_path: Path) -> None:
    """A DMA copies the input into VMEM (not SMEM), in the input's own dtype"""
    for shape, dtype in TRACED:
        mem = _memory(submission, jnp.ones(shape, dtype), submission_path)
        for dma in mem.converting():
            fail(f"{dma.describe()} changes the dtype. A DMA copies bytes and cannot convert "
                 f"{dma.src.dtype} to {dma.dst.dtype}; make the buffer "
                 "`x_hbm_ref.dtype` and convert values after loading them, if at all.")
        source = _input(mem)
        copies = mem.dmas_from(source)
        check(copies, f"no DMA copies from {source.describe()}. Move it into a VMEM buffer with "
                      "`pltpu.sync_copy(x_hbm_ref, buf)` (or an async copy, started and waited).")
        for dma in copies:
            check(dma.dst.space != "smem",
                  f"{dma.describe()} stages the input through SMEM. SMEM holds a few scalars for "
                  "the scalar unit; vector data belongs in VMEM: use `pltpu.VMEM(...)`.")
        check(any(d.dst.space in VMEM_SPACES for d in copies),
              f"no DMA from {source.describe()} lands in VMEM (found: "
              f"{'; '.join(d.describe() for d in copies)}). Copy it into a `pltpu.VMEM` buffer.")


@pytest.mark.judge
def test_dmas_waited(submission: ModuleType, submission_path: Path) -> None:
    """Every DMA is waited, and nothing reads its destination before the wait"""
    for shape, dtype in TRACED:
        mem = _memory(submission, jnp.ones(shape, dtype), submission_path)
        check(mem.dmas, "the kernel makes no DMA; copy `x_hbm_ref` into VMEM with `pltpu.sync_copy`.")
        cause = mem.stuck_message() or mem.uncopied_cause()
        if cause:
            fail(f"for x of {jnp.dtype(dtype).name}{list(shape)}: {cause} (`interpret=True` "
                 "copies at the start and hides this.)")
    (shape, dtype), *_ = TRACED
    silent = _silent_wait(submission, shape, dtype)
    check(silent is None, f"for x of {jnp.dtype(dtype).name}{list(shape)}: {silent}")


def _silent_wait(submission: ModuleType, shape: tuple[int, int], dtype: Any) -> str | None:
    """A wait the kernel makes at run time that nothing will signal (under `pl.when`, in a loop), or None.

    The reading of the kernel leaves alone the waits whose count depends on values; the strict
    interpreter meets them as they run, and names the one that nothing will signal at once.
    """
    try:
        run_strict(submission.scale_shift, jnp.ones(shape, dtype))
    except Exception as exc:  # any other error is the values check's to explain
        return silent_wait_message(exc)
    return None


@pytest.mark.judge
def test_lowers_for_tpu(submission: ModuleType, submission_path: Path) -> None:
    """Every kernel lowers for a TPU, as the chip would compile it"""
    for shape, dtype in FIXED_CASES:
        assert_lowers_for_tpu(submission.scale_shift, jax.ShapeDtypeStruct(shape, dtype), name="scale_shift",
                              path=submission_path)
