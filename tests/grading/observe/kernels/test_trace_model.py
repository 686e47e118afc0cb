"""Tests of `observe.kernels.trace_model`: buffers, windows composed from indexers, and how they compare."""

from __future__ import annotations

import numpy as np
from jax._src.state.indexing import NDIndexer, Slice

from course.grading.observe.kernels.trace_model import Buffer, Window, compose_window, numpy_index


def _buffer(shape=(2, 8, 128), space="vmem", name="bufs") -> Buffer:
    """A float32 argument buffer."""
    return Buffer(index=0, name=name, space=space, dtype=np.dtype(np.float32), shape=shape, arg=2, line=None,
                  site="argument 2")


def test_indexers_compose_into_one_window_of_the_base_buffer() -> None:
    """bufs.at[1] then [2:6] gives rows 2..5 of slot 1, in the buffer's own coordinates."""
    buf = _buffer()
    slot = NDIndexer((np.int32(1), Slice(0, 8, 1), Slice(0, 128, 1)), (2, 8, 128), (), validate=False)
    rows = NDIndexer((Slice(2, 4, 1), Slice(0, 128, 1)), (8, 128), (), validate=False)
    win = compose_window(buf, (slot, rows), {})
    assert (win.starts, win.sizes, win.squeezed) == ((1, 2, 0), (1, 4, 128), (True, False, False))
    assert win.text() == "bufs[1, 2:6, 0:128]" and win.shape == (4, 128) and win.nbytes == 4 * 128 * 4
    assert numpy_index(win) == (slice(1, 2, 1), slice(2, 6, 1), slice(0, 128, 1))


def test_overlap_cover_and_bounds() -> None:
    """Windows of one buffer overlap or cover each other; an unknown start never overlaps; none is clamped."""
    buf = _buffer()
    whole = Window(buf, (0, 0, 0), (2, 8, 128), (1, 1, 1), (False,) * 3)
    slot0 = Window(buf, (0, 0, 0), (1, 8, 128), (1, 1, 1), (True, False, False))
    slot1 = Window(buf, (1, 0, 0), (1, 8, 128), (1, 1, 1), (True, False, False))
    unknown = Window(buf, (None, 0, 0), (1, 8, 128), (1, 1, 1), (True, False, False))
    assert whole.covers(slot1) and not slot1.covers(whole) and slot0.overlaps(whole)
    assert not slot0.overlaps(slot1) and not unknown.overlaps(slot0) and unknown.text() == "bufs[?, 0:8, 0:128]"
    past = Window(_buffer((16, 128), "any", "x_hbm"), (16, 0), (8, 128), (1, 1), (False, False))
    assert not past.in_bounds and past.text() == "x_hbm[16:24, 0:128]"
    assert not Window(_buffer((16, 128), "any", "other"), (0, 0), (8, 128), (1, 1), (False, False)).overlaps(past)


def test_buffers_describe_themselves_in_course_terms() -> None:
    """An argument names itself and its space; a semaphore array has no bytes."""
    assert _buffer().describe() == "`bufs` (VMEM, float32[2, 8, 128])"
    sems = Buffer(index=1, name="sems", space="semaphore_mem", dtype=None, shape=(2,), arg=3, line=None,
                  site="argument 3")
    assert sems.is_semaphore and sems.nbytes == 0 and sems.describe() == "`sems` (semaphore, semaphores[2])"
