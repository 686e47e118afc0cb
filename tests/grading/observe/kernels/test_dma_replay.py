"""Tests of `observe.kernels.dma_replay`: which wait answers which copy, hangs found before running, slots in flight."""

from __future__ import annotations

from jax.experimental import pallas as pl
from pipelines import (
    early_read,
    line_of,
    one_semaphore,
    one_slot,
    reference,
    refill,
    serial,
    swapped,
    traced,
    unguarded,
    whole_wait,
    write_back,
)

from course.grading.observe.kernels.dma_replay import replay_dmas
from course.grading.observe.kernels.kernel_trace import trace_kernel


def _replay(kernel, nb=4, landing="wait", **kwargs):
    """The replay of `kernel` over x of nb blocks, x's data tagged by block."""
    trace = trace_kernel(traced(kernel, nb=nb, **kwargs))
    return replay_dmas(trace, source=trace.arg(0), landing=landing)


def test_the_reference_pipeline_is_clean() -> None:
    """Each wait answers its own copy; each block is read once, in order, with the next one in flight."""
    replay = _replay(reference, nb=4)
    assert replay.hang is None and not replay.mismatches and not replay.touches and not replay.unwaited
    assert [sorted(blocks) for _, blocks in replay.reads] == [[0], [1], [2], [3]]
    for i in range(3):
        assert any(i + 1 in c.blocks for c in replay.flying(replay.first_read_of(i)))
    assert all(c.wait is not None and c.wait.dst == c.dst for c in replay.copies)


def test_a_wait_no_copy_signals_is_a_hang_found_without_running() -> None:
    """Swapped semaphores: the first wait (one block) finds nothing on its semaphore, and names the copy it meant."""
    replay = _replay(swapped, nb=1)
    hang = replay.hang
    assert hang is not None and hang.available == 0 and hang.wanted == 4096 and not hang.in_flight
    assert hang.wait.line == line_of(swapped, 12) and hang.wait.sem.text() == "sems[0]"
    assert hang.described is not None and hang.described.start.sem.text() == "sems[1]"
    # With more blocks it runs for a while, then a later wait finds its semaphore drained.
    later = _replay(swapped, nb=5).hang
    assert later is not None and later.wait.iters == (4,)


def test_a_wait_for_more_bytes_than_in_flight_is_a_hang() -> None:
    """A wait described by the whole of x asks for nb blocks' bytes while one block is in flight."""
    hang = _replay(whole_wait, nb=4).hang
    assert hang is not None and (hang.wanted, hang.available) == (4 * 4096, 4096)
    assert hang.wait.line == line_of(whole_wait, 12) and len(hang.in_flight) == 1
    assert _replay(whole_wait, nb=1).hang is None  # one block: the same byte count, so it returns


def test_two_copies_on_one_semaphore_are_a_mismatch() -> None:
    """Each wait on the shared semaphore finds two copies in flight."""
    replay = _replay(one_semaphore, nb=3)
    assert replay.hang is None
    first = replay.mismatches[0]
    assert len(first.in_flight) == 2 and [sorted(c.blocks) for c in first.in_flight] == [[0], [1]]


def test_a_copy_into_a_slot_still_filling_is_a_touch() -> None:
    """One slot: the prefetch of block 1 lands on block 0, still in flight."""
    touch = _replay(one_slot, nb=3).touches[0]
    assert touch.how == "write" and touch.event.kind == "dma_start" and sorted(touch.copy.blocks) == [0]
    assert touch.event.line == line_of(one_slot, 8)


def test_reads_before_the_wait_and_refills_before_use_are_touches() -> None:
    """A read between start and wait; a copy over landed data nobody read; a write to a write-back's source."""
    (early,) = _replay(early_read, nb=1).touches
    assert early.how == "read" and early.event.line == line_of(early_read, 4)
    (over,) = _replay(refill, nb=2).touches
    assert over.how == "refill" and sorted(over.copy.blocks) == [0] and over.event.line == line_of(refill, 6)
    (source,) = _replay(write_back, nb=1, out_specs=pl.BlockSpec(memory_space=pl.ANY)).touches
    assert source.how == "source" and source.event.line == line_of(write_back, 7)


def test_a_copy_no_wait_answers_is_unwaited() -> None:
    """The unguarded prefetch of block nb is started and never waited."""
    (left,) = _replay(unguarded, nb=2).unwaited
    assert left.src.text() == "x_hbm[16:24, 0:128]" and not left.blocks <= {0, 1}


def test_serial_copies_leave_nothing_in_flight_during_compute() -> None:
    """Start-then-wait: when block 0 is read, no copy of block 1 has started."""
    replay = _replay(serial, nb=2)
    assert not replay.touches and not replay.mismatches
    assert not replay.flying(replay.first_read_of(0))


def test_landing_at_start_sees_a_refill_landing_late_does_not() -> None:
    """With copies landing at their start, one_slot's prefetch replaces block 0 before block 0 is read."""
    at_start = _replay(one_slot, nb=2, landing="start")
    assert [sorted(blocks) for _, blocks in at_start.reads][0] == [1]
    at_wait = _replay(one_slot, nb=2, landing="wait")
    assert [sorted(blocks) for _, blocks in at_wait.reads][0] == [0]
