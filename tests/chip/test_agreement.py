"""Comparing a chip's result with the CPU's, and reading what a chip's refusal says."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from course.chip.agreement import TOLERANCE, agree, refusal
from course.chip.presence import tpu_here


def test_a_chip_matmul_at_default_precision_agrees_and_a_real_mistake_does_not() -> None:
    """2.4e-3 off (a v5e's float32 matmul) agrees; a missing K block (errors of order one) does not."""
    rng = np.random.default_rng(0)
    want = rng.standard_normal((64, 128)).astype(np.float32)
    close = want + 2.4e-3 * np.abs(want).max() * rng.uniform(-1, 1, want.shape).astype(np.float32)
    assert agree(close, want).ok and agree(close, want).tolerance == TOLERANCE["float32"]
    wrong = want.copy()
    wrong[:, 64:] *= 0.5
    found = agree(wrong, want)
    assert not found.ok and found.where == str([int(i) for i in np.argwhere(np.abs(wrong - want) > 0.02 *
                                                                             np.abs(want).max())[0]])


def test_nans_infinities_and_integers_must_agree_exactly() -> None:
    """A NaN where the other has a number, an integer off by one: both disagree."""
    want = np.ones((8, 128), np.float32)
    nan = want.copy()
    nan[3, 5] = np.nan
    assert not agree(nan, want).ok and agree(nan, want).where == "[3, 5]"
    assert agree(nan, nan).ok
    ints = np.arange(10, dtype=np.int32)
    assert agree(ints, ints).ok and not agree(ints + (ints == 9), ints).ok
    assert not agree(want, want[:4]).ok


def test_a_refusal_is_trimmed_to_its_first_line_and_the_learners_line(tmp_path: Path) -> None:
    """Mosaic's words name the file and line; the VMEM error says how much did not fit."""
    path = tmp_path / "aliasing_order.py"
    source = "a = 1\nb = 2\n    o_ref[pl.ds(i, 3)] = x\n"
    exc = RuntimeError(f'Mosaic failed to compile TPU kernel: Not implemented: dynamic store with unaligned indices\n'
                       f'at location: loc("{path}":3:8)\n... 200 lines of MLIR ...')
    assert refusal(exc, path, source) == (
        "refused", "Mosaic failed to compile TPU kernel: Not implemented: dynamic store with unaligned indices "
                   "(line 3: o_ref[pl.ds(i, 3)] = x)")
    vmem = RuntimeError("RESOURCE_EXHAUSTED: E1001: CompileTimeScopedVmemOom:\nRan out of memory ... Scoped "
                        "allocation with size 20.27M and limit 16.00M exceeded scoped vmem limit by 4.27M.")
    assert refusal(vmem, path, source) == (
        "vmem", "the kernel needs 20.27MB of scoped VMEM, over the 16.00MB limit")
    halted = RuntimeError("FAILED_PRECONDITION: The program continuator has halted unexpectedly.")
    assert refusal(halted, path, source)[0] == "halted"


@pytest.mark.parametrize(("env", "files", "expected"), [
    ({"COURSE_CHIP": "0", "TPU_ACCELERATOR_TYPE": "v5litepod-4"}, ["accel0"], False),
    ({"COURSE_CHIP": "1"}, [], True),
    ({"JAX_PLATFORMS": "cpu", "TPU_ACCELERATOR_TYPE": "v5litepod-4"}, ["accel0"], False),
    ({}, [], False),
])
def test_presence_follows_the_switch_and_the_platforms_asked_for(tmp_path: Path, env: dict[str, str],
                                                                  files: list[str], expected: bool) -> None:
    """COURSE_CHIP wins; JAX_PLATFORMS without tpu means no chip; nothing at all means none."""
    for name in files:
        (tmp_path / name).touch()
    assert tpu_here(env, tmp_path) is expected


def test_presence_needs_the_runtime_and_the_device_files(tmp_path: Path) -> None:
    """A runtime library named by TPU_LIBRARY_PATH and a non-empty /dev/vfio: a TPU (a v5e's layout)."""
    library = tmp_path / "libtpu.so"
    library.touch()
    dev = tmp_path / "dev"
    (dev / "vfio").mkdir(parents=True)
    env = {"TPU_LIBRARY_PATH": str(library)}
    assert not tpu_here(env, dev)
    (dev / "vfio" / "0").touch()
    assert tpu_here(env, dev)
