"""Grader for `double_buffer`: values with copies landing late and early, and the DMA schedule the kernel runs.

A correct pipeline is right whenever each DMA lands, anywhere between its start and its wait, so
the values run twice under the strict TPU interpreter: copies landing at their wait (its default)
and at their start (`dma_execution_mode="eager"`). Everything else reads a shadow run of the
kernel over its grid (`trace_kernel`: exact integer control flow, no compile) and a replay of its
DMAs (`replay_dmas`): which wait answers which copy, what each read consumes, what is in flight.
A kernel whose replay shows a wait that can never return is not run at all: the interpreter would
spin for ever, so the value checks name the line instead (in the judge, which cannot trace the
kernel, the interpreter's `SilentWait` names it).
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
    CheckFailed,
    DmaCopy,
    DmaReplay,
    Hang,
    KernelCall,
    KernelTrace,
    TraceUnsupported,
    WaitMismatch,
    assert_dtype,
    assert_is_array,
    assert_shape,
    callback_error,
    check,
    fail,
    jitted_once,
    pallas_calls,
    quote_line,
    replay_dmas,
    strict_values,
    tpu_fallback,
    trace_kernel,
)

ROWS, LANES = 8, 128
BLOCK_BYTES = ROWS * LANES * 4
HBM = ("any", "hbm")


def _call(submission: ModuleType, path: Path, nb: int) -> KernelCall:
    """The one `pallas_call` that `stream_scale` makes for nb blocks (traced, never run)."""
    spec = jax.ShapeDtypeStruct((nb * ROWS, LANES), jnp.float32)
    calls = tpu_fallback(lambda: pallas_calls(submission.stream_scale, spec, path=path))
    check(calls, "`stream_scale` makes no `pl.pallas_call`: the copy loop belongs in a kernel.")
    check(len(calls) == 1, f"`stream_scale` makes {len(calls)} `pallas_call`s; make one.")
    check(calls[0].num_inputs >= 1, "the `pallas_call` takes no input: give it x.")
    return calls[0]


def _x_space(call: KernelCall) -> str:
    """The memory space of the kernel ref that receives x."""
    aval = call.jaxpr.invars[call.num_index].aval
    space = getattr(aval, "memory_space", None)
    return "default" if space is None else str(getattr(space, "value", space)).lower()


def _trace(submission: ModuleType, path: Path, nb: int) -> tuple[KernelTrace | None, Any]:
    """The kernel's trace for nb blocks and x's buffer in it; (None, None) when x is not in HBM."""
    call = _call(submission, path, nb)
    if _x_space(call) not in HBM:
        return None, None  # test_x_stays_in_any says what is wrong; the schedule checks do not apply
    try:
        trace = trace_kernel(call)
    except TraceUnsupported as exc:
        fail(f"the grader could not follow your kernel: {exc}.")
    return trace, trace.arg(call.num_index)


def _replay(submission: ModuleType, path: Path, nb: int, landing: str = "wait") -> DmaReplay | None:
    """The DMA replay of the kernel for nb blocks, with x's data tagged by block; None if x is not in HBM."""
    trace, x = _trace(submission, path, nb)
    return None if trace is None else replay_dmas(trace, source=x, block_rows=ROWS, landing=landing)


def _at(path: Path, line: int | None) -> str:
    """'line 14: copy(0, 0).start()' or 'the kernel'."""
    return quote_line(path, line) or "the kernel"


def _blocks(copy: DmaCopy) -> str:
    """'block 3' or 'blocks 0 to 4' of x, for the copy's source."""
    blocks = sorted(copy.blocks)
    if not blocks:
        return copy.src.text()
    return f"block {blocks[0]}" if len(blocks) == 1 else f"blocks {blocks[0]} to {blocks[-1]}"


def _never_started(hang: Hang, replay: DmaReplay) -> int | None:
    """The block of x the hung wait describes, when no copy of it was ever started; else None."""
    ranges = hang.wait.src.ranges() if hang.wait.src is not None else None
    if not ranges or hang.wait.src.buffer.space not in HBM:
        return None
    block = ranges[0][0] // ROWS
    return None if any(block in c.blocks for c in replay.copies) else block


def _hang_message(hang: Hang, path: Path, ran: bool = False, replay: DmaReplay | None = None) -> str:
    """Why a wait never returns; for a value check (`ran`), also that the grader did not run the kernel."""
    sem = hang.wait.sem.text() if hang.wait.sem is not None else "its semaphore"
    at = _at(path, hang.wait.line)
    missing = _never_started(hang, replay) if replay is not None and hang.described is None else None
    if hang.available == 0 and missing is not None:
        tail = ", so the grader did not run your kernel" if ran else ""
        return (f"{at} waits for the copy of block {missing} of x, which was never started: no copy in flight "
                f"signals {sem}, so this wait never returns, and the TPU interpreter would spin for ever{tail}. "
                f"The prefetch that should start block {missing} was skipped: start block i + 1 whenever "
                "i + 1 < the number of blocks (check the `pl.when` condition and the loop bounds).")
    if hang.available == 0:
        advice = "Start and wait each copy on one semaphore, one semaphore per slot."
        text = f"{at} waits on {sem}, which no copy in flight signals"
        if hang.described is not None:
            text += (f" (the copy it describes, of {_blocks(hang.described)} into {hang.described.dst.text()} "
                     f"started at line {hang.described.start.line}, signals "
                     f"{hang.described.start.sem.text() if hang.described.start.sem else 'another semaphore'})")
    else:
        text = (f"{at} waits for {hang.wanted} bytes on {sem}, but only {hang.available} are landed or in "
                "flight there: a wait must describe the copy it waits for, with the same byte count "
                f"(one (8, 128) float32 block is {BLOCK_BYTES} bytes)")
        advice = "Wait on the copy itself: call `.wait()` on the descriptor you started."
    tail = ", so the grader did not run your kernel" if ran else ""
    return f"{text}: this wait never returns, and the TPU interpreter would spin for ever{tail}. {advice}"


def _output_blocks(got: np.ndarray, x: np.ndarray, nb: int, landing: str) -> str | None:
    """What the first wrong output block holds, and what that says about the schedule."""
    want = 2 * x
    wrong = [i for i in range(nb) if not np.array_equal(got[i * ROWS:(i + 1) * ROWS], want[i * ROWS:(i + 1) * ROWS])]
    if not wrong:
        return None
    i = wrong[0]
    block = got[i * ROWS:(i + 1) * ROWS]
    head = f"output block {i} of {nb} is wrong ({len(wrong)} wrong in all): "
    if np.isnan(block).any():
        if landing == "wait":
            why = ("it was computed from a slot its copy had not filled yet (read before its wait, or the "
                   "wait answered another copy), or written back by a copy that was never waited")
        else:
            why = "it was computed from a slot nothing had been copied into"
        return head + f"it is NaN: {why}."
    same = [j for j in range(nb) if np.array_equal(block, want[j * ROWS:(j + 1) * ROWS])]
    if same and same[0] > i:
        return head + (f"it holds 2 * block {same[0]}: the slot was refilled before block {i} was computed. A "
                       "slot is busy until its block has been used; refill it only after that.")
    if same:
        return head + (f"it holds 2 * block {same[0]}: the slot still held an older block, or its wait "
                       "answered another block's copy. Give each slot its own semaphore.")
    return head + "it holds neither NaN nor 2 * any block of x."


def _values(submission: ModuleType, path: Path, rng: np.random.Generator, nb: int, landing: str) -> None:
    """`stream_scale` on a random x of nb blocks, copies landing at their wait or their start."""
    # The replay of the kernel's trace (read in the judge too) names a wait that never returns before the run.
    try:
        replay = _replay(submission, path, nb, landing)
    except CheckFailed:
        replay = None  # no one kernel to replay: the structural checks say why
    if replay is not None and replay.hang is not None:
        fail(_hang_message(replay.hang, path, ran=True, replay=replay))
    x = rng.standard_normal((nb * ROWS, LANES)).astype(np.float32)
    fn = jitted_once(submission.stream_scale, "stream_scale")
    overrides = {} if landing == "wait" else {"dma_execution_mode": "eager"}
    name = f"`stream_scale(x)` for x of shape {x.shape} (copies landing at their {landing})"
    try:
        got = strict_values(fn, jnp.asarray(x), **overrides)
    except Exception as exc:
        inner = callback_error(exc)
        if inner is None:
            raise
        try:
            outside = _outside(submission, path, nb)
        except CheckFailed:
            outside = None  # no one kernel to read: the structural checks say why
        fail(f"{name}: the strict TPU interpreter stopped your kernel: {inner}"
             + (f" {outside}" if outside else ""))
    got = assert_is_array(got, f"the result of {name}")
    assert_dtype(got, np.float32, f"the result of {name}")
    assert_shape(got, x.shape, f"the result of {name}")
    text = _output_blocks(np.asarray(got), x, nb, landing)
    check(text is None, f"{name}: {text}")


@pytest.mark.judge
@pytest.mark.points(2)
def test_values_when_copies_land_at_wait(submission: ModuleType, rng: np.random.Generator,
                                         submission_path: Path) -> None:
    """2 * x for 1 and 5 blocks, under the strict interpreter with copies landing at their wait"""
    for nb in (1, 5):
        _values(submission, submission_path, rng, nb, "wait")


@pytest.mark.judge
@pytest.mark.points(2)
def test_values_when_copies_land_at_start(submission: ModuleType, rng: np.random.Generator,
                                          submission_path: Path) -> None:
    """2 * x for 5 blocks, under the strict interpreter with copies landing at their start"""
    _values(submission, submission_path, rng, 5, "start")


@pytest.mark.judge
def test_x_stays_in_any(submission: ModuleType, submission_path: Path) -> None:
    """x reaches the kernel in HBM: its spec is `pl.BlockSpec(memory_space=pl.ANY)`"""
    call = _call(submission, submission_path, 5)
    space = _x_space(call)
    check(space in HBM,
          f"x reaches the kernel as Ref<{space}>: Pallas already copied (and pipelined) it for you, so there "
          "is nothing left to stream by hand. Give x `pl.BlockSpec(memory_space=pl.ANY)` and move it with "
          "`pltpu.make_async_copy`.")


def _outside(submission: ModuleType, path: Path, nb: int) -> str | None:
    """The first copy (or access) of the kernel for nb blocks that reaches outside its buffer, in words."""
    trace, _ = _trace(submission, path, nb)
    if trace is None:
        return None
    for event in trace.outside():
        win = next(w for w in (event.src, event.dst, event.window) if w is not None and not w.in_bounds)
        buf = win.buffer
        advice = (" Guard the prefetch with `pl.when(i + 1 < nb)`: after the last block there is nothing to "
                  "fetch." if event.kind == "dma_start" else "")
        return (f"{_at(path, event.line)} reaches outside {buf.name} (shape {buf.shape}): it names "
                f"{win.text()}, with x of {nb} block(s).{advice}")
    return None


@pytest.mark.judge
def test_copies_stay_inside_x(submission: ModuleType, submission_path: Path) -> None:
    """No copy reaches outside its buffer, for 1, 2, 5 and 16 blocks"""
    for nb in (1, 2, 5, 16):
        found = _outside(submission, submission_path, nb)
        check(found is None, found or "")


@pytest.mark.judge
@pytest.mark.points(2)
def test_streams_through_two_slots(submission: ModuleType, submission_path: Path) -> None:
    """Each copy from x moves one (8, 128) block, each block once, into at most two blocks of VMEM"""
    for nb in (5, 16):
        trace, x = _trace(submission, submission_path, nb)
        if trace is None:
            return
        starts = [e for e in trace.of("dma_start") if e.src is not None and e.src.buffer is x]
        check(starts, "no DMA copies from x: stream it into VMEM with `pltpu.make_async_copy(...).start()`.")
        for event in starts:
            check(event.src.shape in ((ROWS, LANES), (1, ROWS, LANES)),
                  f"{_at(submission_path, event.line)} copies {event.src.text()} in one DMA: stream x one "
                  "(8, 128) block per copy, so that the next block can land while this one is used.")
        counts = np.zeros(nb, int)
        for event in starts:
            if event.src.in_bounds:  # a copy from past the end is test_copies_stay_inside_x's business
                counts[event.src.starts[0] // ROWS] += 1
        check((counts == 1).all(), f"with x of {nb} blocks, the copies from x take blocks {counts.tolist()} "
                                   "times each (by block): copy each block exactly once.")
        sites = {e.dst.buffer.site: e.dst.buffer for e in starts}
        vmem = sum(b.nbytes for b in sites.values())
        text = " and ".join(f"{b.name}{list(b.shape)}" for b in sites.values())
        check(vmem <= 2 * BLOCK_BYTES,
              f"x is copied into {text}: {vmem // BLOCK_BYTES} blocks of VMEM. Two (8, 128) slots are enough: "
              "one is computed on while the next block lands in the other.")
        for buf in sites.values():
            check(buf.space == "vmem", f"x is copied into {buf.describe()}: stream it into VMEM slots.")


def _mismatch_message(m: WaitMismatch, path: Path) -> str:
    """What a wait found on its semaphore instead of exactly one copy of its own size."""
    at, sem = _at(path, m.wait.line), m.wait.sem.text() if m.wait.sem is not None else "its semaphore"
    if len(m.in_flight) > 1:
        copies = "; ".join(f"{_blocks(c)} started at line {c.start.line}" for c in m.in_flight)
        return (f"{at} finds {len(m.in_flight)} copies in flight on {sem} ({copies}): a semaphore counts bytes, "
                "so the wait cannot tell which copy landed (the TPU interpreter lands the newest first). Give "
                "each slot its own semaphore.")
    if not m.in_flight:
        return (f"{at} waits on {sem}, where no copy is in flight: it is answered by bytes another copy left "
                "there. Wait each copy on the semaphore it signals, once.")
    return (f"{at} waits for {m.wanted} bytes on {sem}, but the copy in flight there moves "
            f"{m.in_flight[0].nbytes}: a wait must describe the copy it waits for (the same byte count).")


@pytest.mark.judge
@pytest.mark.points(2)
def test_every_copy_waited_on_its_own_semaphore(submission: ModuleType, submission_path: Path) -> None:
    """Every copy is waited, and each wait finds exactly one copy of its byte count in flight on its semaphore"""
    for nb in (1, 2, 5):
        replay = _replay(submission, submission_path, nb)
        if replay is None:
            return
        if replay.hang is not None:
            fail(_hang_message(replay.hang, submission_path, replay=replay))
        if replay.mismatches:
            fail(_mismatch_message(replay.mismatches[0], submission_path))
        for copy in replay.unwaited:
            fail(f"{_at(submission_path, copy.start.line)} starts the copy of {copy.src.text()} into "
                 f"{copy.dst.text()}, which is never waited "
                 f"(x of {nb} block(s)): wait for every copy before the kernel ends, write-backs included; "
                 "until its wait, a copy's data may not have arrived.")


def _touch_message(touch: Any, path: Path) -> str:
    """What touched a slot while its copy was in flight, or refilled it before its block was used."""
    at, copy = _at(path, touch.event.line), touch.copy
    if touch.how == "refill":
        return (f"{at} overwrites {touch.event.dst.text()} before {_blocks(copy)} that landed there was used: "
                "a slot is busy until its block has been read. Prefetch into the other slot.")
    if touch.how == "source":
        return (f"{at} writes {copy.src.text()} while {copy.describe()} is still reading it: wait for that "
                "copy before reusing its source.")
    verb = "reads" if touch.how == "read" else "writes" if touch.event.kind != "dma_start" else "starts a copy into"
    return (f"{at} {verb} {copy.dst.text()} while {copy.describe()} (of {_blocks(copy)}) is still filling it: "
            "a slot is busy from its copy's start to its wait. Wait first, or use the other slot.")


@pytest.mark.judge
@pytest.mark.points(2)
def test_slot_untouched_while_in_flight(submission: ModuleType, submission_path: Path) -> None:
    """No slot is read or written while a copy fills it, and none is refilled before its block was used"""
    for nb in (2, 5):
        replay = _replay(submission, submission_path, nb)
        if replay is None:
            return
        if replay.touches:
            fail(_touch_message(replay.touches[0], submission_path))
        if replay.hang is not None:
            fail(_hang_message(replay.hang, submission_path, replay=replay))


@pytest.mark.judge
@pytest.mark.points(2)
def test_next_block_in_flight_during_compute(submission: ModuleType, submission_path: Path) -> None:
    """When block i is first used (i < nb - 1), the copy of block i + 1 is already in flight"""
    for nb in (2, 5, 16):
        replay = _replay(submission, submission_path, nb)
        if replay is None or replay.hang is not None:
            return  # test_every_copy_waited_on_its_own_semaphore names the wait that never returns
        for i in range(nb - 1):
            use = replay.first_read_of(i)
            if use is None or any(i + 1 in c.blocks for c in replay.flying(use)):
                continue
            nxt = next((c for c in replay.copies if i + 1 in c.blocks), None)
            if nxt is None:
                when = "it is never copied"
            elif nxt.start.order > use.order:
                when = f"its copy starts later, at {_at(submission_path, nxt.start.line)}"
            else:
                when = (f"its copy was already waited, at {_at(submission_path, nxt.wait.line if nxt.wait else None)}"
                        ": wait for a block only when you need it")
            fail(f"block {i} is used at {_at(submission_path, use.line)} while no copy of block {i + 1} is in "
                 f"flight ({when}), with x of {nb} blocks. Start the copy of block i + 1 before computing "
                 "block i, so the copy and the compute overlap.")


@pytest.mark.judge
def test_lowers_for_tpu(submission: ModuleType, submission_path: Path) -> None:
    """Every kernel lowers for a TPU, as the chip would compile it"""
    from course.grading import assert_lowers_for_tpu  # kept beside its one use

    for nb in (1, 5):
        spec = jax.ShapeDtypeStruct((nb * ROWS, LANES), jnp.float32)
        assert_lowers_for_tpu(submission.stream_scale, spec, name="stream_scale", path=submission_path)
