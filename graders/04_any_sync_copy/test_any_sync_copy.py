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
    check,
    explain_strict_failure,
    fail,
    hbm_access_message,
    interpreter_failure,
    kernel_memory,
    pallas_calls,
    run_strict,
)

F32, BF16 = jnp.float32, jnp.bfloat16
# Spaces a DMA may land in to be indexed: VMEM, or a blocked operand (which is VMEM on a TPU).
VMEM_SPACES = ("vmem", "default")


def _cases(rng: np.random.Generator) -> list[tuple[tuple[int, int], Any]]:
    """Shapes (8k, 128m) in both dtypes: the smallest tile and two drawn at random."""
    def shape() -> tuple[int, int]:
        return 8 * int(rng.integers(2, 4)), 128 * int(rng.integers(1, 3))

    return [((8, 128), F32), (shape(), F32), (shape(), BF16)]


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


def _run(submission: ModuleType, x: jax.Array, path: Path) -> Any:
    """`scale_shift(x)` under the strict interpreter; its errors explained by the learner's line."""
    try:
        return run_strict(submission.scale_shift, x)
    except Exception as exc:
        inner = interpreter_failure(exc)
        if inner is None and "cannot be referenced directly" not in str(exc):
            raise  # the learner's own error: the platform reports it with their line
        why = explain_strict_failure(exc, _memory(submission, x, path))
        fail(why or f"the TPU interpreter stopped your kernel with `{inner or exc}`.")


def _sentence(text: str) -> str:
    """`text` with its first letter capitalised, to follow another sentence."""
    return text[:1].upper() + text[1:]


def _nan_message(name: str, got: np.ndarray, mem: KernelMemory) -> str:
    """Where the NaNs are, and why: memory that no copy or store ever filled."""
    rows = np.flatnonzero(np.isnan(got).any(axis=1))
    cause = mem.uncopied_cause() or (
        "Every DMA is waited, so part of `x` was never copied or part of the output never written: "
        "copy the whole of `x` (its shape varies, so take shapes from the refs, not from "
        "constants) and write every element of the output.")
    return (f"{name} has {int(np.isnan(got).sum())} NaN element(s) of {got.size}, in rows "
            f"{rows[0]} to {rows[-1]}. Under the strict TPU interpreter fresh memory reads as NaN, "
            f"so these come from memory that nothing was copied into. {_sentence(cause)}")


@pytest.mark.points(2)
def test_values(submission: ModuleType, rng: np.random.Generator, submission_path: Path) -> None:
    """`scale_shift` returns 2 * x + 1 under the strict TPU interpreter, for float32 and bfloat16"""
    for shape, dtype in _cases(rng):
        x = _draw(rng, shape, dtype)
        want = (np.asarray(x, np.float32) * 2 + 1).astype(jnp.dtype(dtype))
        got = _run(submission, x, submission_path)
        name = f"scale_shift(x) for {jnp.dtype(dtype).name}{list(shape)}"
        if isinstance(got, jax.Array) and got.shape == want.shape and jnp.issubdtype(got.dtype, jnp.floating):
            values = np.asarray(got, np.float32)
            if np.isnan(values).any():
                fail(_nan_message(name, values, _memory(submission, x, submission_path)))
        tol = 1e-2 if dtype == BF16 else 1e-6
        assert_array(got, want, name=name, rtol=tol, atol=tol)


def test_input_in_hbm(submission: ModuleType, submission_path: Path) -> None:
    """The kernel's first operand stays in HBM: its spec is `pl.BlockSpec(memory_space=pl.ANY)`"""
    x = jnp.ones((16, 128), F32)
    ref = _input(_memory(submission, x, submission_path))
    check(ref.space in HBM_SPACES,
          f"the kernel receives `x` as {ref.describe()}, so Pallas has already copied it into "
          "VMEM for you and there is nothing left to move by hand. Give the input "
          "`pl.BlockSpec(memory_space=pl.ANY)` so it stays in HBM.")


def test_no_direct_access(submission: ModuleType, submission_path: Path) -> None:
    """No load or store touches an HBM (ANY) ref: the kernel indexes only VMEM copies"""
    for dtype in (F32, BF16):
        mem = _memory(submission, jnp.ones((16, 128), dtype), submission_path)
        direct = mem.in_space(*HBM_SPACES)
        check(not direct, hbm_access_message(direct[0]) if direct else "")


def test_dma_into_vmem(submission: ModuleType, submission_path: Path) -> None:
    """A DMA copies the input into VMEM (not SMEM), in the input's own dtype"""
    for dtype in (F32, BF16):
        mem = _memory(submission, jnp.ones((16, 128), dtype), submission_path)
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


def test_dmas_waited(submission: ModuleType, submission_path: Path) -> None:
    """Every DMA is waited, and nothing reads its destination before the wait"""
    mem = _memory(submission, jnp.ones((16, 128), F32), submission_path)
    check(mem.dmas, "the kernel makes no DMA; copy `x_hbm_ref` into VMEM with `pltpu.sync_copy`.")
    cause = mem.uncopied_cause()
    if cause:
        fail(f"{cause} Wait for every copy (`copy.wait()`, or `pltpu.sync_copy`, which waits) "
             "before using what it copied. `interpret=True` copies at the start and hides this.")
