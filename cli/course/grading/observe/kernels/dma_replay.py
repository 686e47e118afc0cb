"""Replay a kernel trace's DMAs: which wait answers which copy, what lands where, what each read uses.

A DMA semaphore counts bytes. A copy signals its semaphore with its size when it lands; a wait
asks for the byte count of its own descriptor and returns only once the semaphore holds that
many. `replay_dmas(trace)` follows the trace in program order with that rule, copy by copy:

- a wait answers the copies in flight on its semaphore, oldest first, until its bytes are
  covered. When the bytes landed and in flight fall short, the wait never returns: the replay
  stops there and reports the `Hang` (the TPU interpreter would spin for ever);
- a wait that does not find exactly one copy in flight, of its own byte count, is a mismatch;
- a read, write or DMA start that touches a copy's destination (or writes its source) while the
  copy is in flight is a `Touch`, and so is a copy started into memory whose landed data was
  never read (a refill before use);
- data copied from the `source` buffer is tagged by block, so each read says which blocks of it
  it consumed, and each copy in flight is known by the blocks it carries.

`landing="start"` lands each copy at its start instead (the interpreter's eager mode), which
predicts what a kernel computes when copies are fast rather than late.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from course.grading.observe.kernels.trace_model import Buffer, Event, Window

__all__ = ["DmaCopy", "DmaReplay", "Hang", "Touch", "WaitMismatch", "replay_dmas"]

# Memory a kernel reaches only by DMA: data landing there is not waiting to be read by the kernel.
_HBM = frozenset({"any", "hbm"})


@dataclass(eq=False)
class DmaCopy:
    """One DMA: its start, the wait that answered it (None if none did) and the source blocks it carries."""

    start: Event
    blocks: frozenset[int]
    wait: Event | None = None

    @property
    def src(self) -> Window:
        """Where it copies from."""
        return self.start.src

    @property
    def dst(self) -> Window:
        """Where it copies to."""
        return self.start.dst

    @property
    def nbytes(self) -> int:
        """How many bytes it moves."""
        return self.start.src.nbytes

    def describe(self) -> str:
        """'the copy of x_hbm[8:16, 0:128] into buf[1, 0:8, 0:128] started at line 14'."""
        at = f" started at line {self.start.line}" if self.start.line else ""
        return f"the copy of {self.src.text()} into {self.dst.text()}{at}"


@dataclass(frozen=True)
class Hang:
    """A wait that never returns: its semaphore holds (and will get) fewer bytes than it asks for."""

    wait: Event
    wanted: int
    available: int
    in_flight: tuple[DmaCopy, ...]
    described: DmaCopy | None = None  # a copy in flight elsewhere into the window the wait names


@dataclass(frozen=True)
class WaitMismatch:
    """A wait that did not find exactly one copy of its own byte count in flight on its semaphore."""

    wait: Event
    wanted: int
    in_flight: tuple[DmaCopy, ...]
    landed: int  # bytes already counted on the semaphore before the wait


@dataclass(frozen=True)
class Touch:
    """Memory of a copy in flight touched by `event`; `how` is "read", "write", "source" or "refill"."""

    event: Event
    copy: DmaCopy
    how: str


@dataclass
class _Landed:
    """Data that landed in a destination window, and whether anything has read it since."""

    window: Window
    blocks: frozenset[int]
    copy: DmaCopy
    used: bool = False


@dataclass
class DmaReplay:
    """What the replay found; `hang` is set when it stopped at a wait that never returns."""

    copies: list[DmaCopy] = field(default_factory=list)
    hang: Hang | None = None
    mismatches: list[WaitMismatch] = field(default_factory=list)
    touches: list[Touch] = field(default_factory=list)
    reads: list[tuple[Event, frozenset[int]]] = field(default_factory=list)
    in_flight_at: dict[int, tuple[DmaCopy, ...]] = field(default_factory=dict)

    @property
    def unwaited(self) -> list[DmaCopy]:
        """Copies that no wait answered."""
        return [c for c in self.copies if c.wait is None]

    def first_read_of(self, block: int) -> Event | None:
        """The first read that consumed `block` of the source."""
        return next((e for e, blocks in self.reads if block in blocks), None)

    def flying(self, event: Event) -> tuple[DmaCopy, ...]:
        """The copies in flight (started, not yet answered) just before a read."""
        return self.in_flight_at.get(event.order, ())


def _blocks(src: Window, source: Buffer | None, rows: int) -> frozenset[int]:
    """The blocks of `rows` rows of the source that a copy's source window covers."""
    ranges = src.ranges()
    if source is None or src.buffer is not source or ranges is None:
        return frozenset()
    lo, hi = ranges[0]
    return frozenset(range(max(lo, 0) // rows, (max(hi, 1) - 1) // rows + 1))


def _same_window(a: Window | None, b: Window | None) -> bool:
    """Whether two windows name the same box of the same buffer."""
    return a is not None and b is not None and a.buffer is b.buffer and a.starts == b.starts and a.sizes == b.sizes


def _sem_key(win: Window | None) -> tuple[int, tuple[int | None, ...]] | None:
    """A semaphore's identity: its buffer and index."""
    if win is None:
        return None
    return win.buffer.index, win.starts


@dataclass
class _State:
    """The replay's running state."""

    source: Buffer | None
    rows: int
    landing: str
    out: DmaReplay = field(default_factory=DmaReplay)
    queues: dict[object, list[DmaCopy]] = field(default_factory=dict)
    counts: dict[object, int] = field(default_factory=dict)
    landed: list[_Landed] = field(default_factory=list)

    def flying(self) -> list[DmaCopy]:
        """Every copy in flight, oldest first."""
        return sorted((c for q in self.queues.values() for c in q), key=lambda c: c.start.order)

    def land(self, copy: DmaCopy) -> None:
        """The copy's data arrives: it replaces what its destination held."""
        self.landed = [d for d in self.landed if not copy.dst.covers(d.window)]
        self.landed.append(_Landed(copy.dst, copy.blocks, copy))

    def start(self, event: Event) -> None:
        """A DMA starts: check what it overwrites, then put it in flight."""
        copy = DmaCopy(event, _blocks(event.src, self.source, self.rows))
        for other in self.flying():
            if other.dst.overlaps(event.dst):
                self.out.touches.append(Touch(event, other, "write"))
            elif other.src.overlaps(event.dst):
                self.out.touches.append(Touch(event, other, "source"))
        for data in self.landed:
            if data.window.overlaps(event.src):
                data.used = True  # copied onward (a block sent straight back out counts as used)
            elif not data.used and data.window.overlaps(event.dst) and data.window.buffer.space not in _HBM:
                self.out.touches.append(Touch(event, data.copy, "refill"))
        self.out.copies.append(copy)
        self.queues.setdefault(_sem_key(event.sem), []).append(copy)
        if self.landing == "start":
            self.land(copy)

    def wait(self, event: Event) -> bool:
        """A wait: answer copies oldest first; False when it can never return."""
        key, wanted = _sem_key(event.sem), event.nbytes
        queue, have = self.queues.setdefault(key, []), self.counts.get(key, 0)
        if len(queue) != 1 or queue[0].nbytes != wanted or have:
            self.out.mismatches.append(WaitMismatch(event, wanted, tuple(queue), have))
        if have + sum(c.nbytes for c in queue) < wanted:
            described = next((c for c in self.flying() if c not in queue and _same_window(c.dst, event.dst)), None)
            self.out.hang = Hang(event, wanted, have + sum(c.nbytes for c in queue), tuple(queue), described)
            return False
        while have < wanted:
            copy = queue.pop(0)
            copy.wait = event
            have += copy.nbytes
            if self.landing == "wait":
                self.land(copy)
        self.counts[key] = have - wanted
        return True

    def access(self, event: Event) -> None:
        """A read or write: check the copies in flight, then consume or replace landed data."""
        win = event.window
        for copy in self.flying():
            if copy.dst.overlaps(win):
                self.out.touches.append(Touch(event, copy, "read" if event.kind == "read" else "write"))
            elif event.kind != "read" and copy.src.overlaps(win):
                self.out.touches.append(Touch(event, copy, "source"))
        if event.kind in ("read", "update"):
            used = frozenset().union(*(d.blocks for d in self.landed if d.window.overlaps(win)))
            for data in self.landed:
                if data.window.overlaps(win):
                    data.used = True
            self.out.reads.append((event, used))
            self.out.in_flight_at[event.order] = tuple(self.flying())
        if event.kind in ("write", "update"):
            self.landed = [d for d in self.landed if not win.covers(d.window)]


def replay_dmas(trace: object, *, source: Buffer | None = None, block_rows: int = 8,
                landing: str = "wait") -> DmaReplay:
    """Replay the DMAs of a `KernelTrace` in program order (see the module's docstring)."""
    state = _State(source, block_rows, landing)
    for event in trace.events:  # type: ignore[attr-defined]
        if event.kind == "dma_start":
            state.start(event)
        elif event.kind == "dma_wait":
            if not state.wait(event):
                return state.out
        elif event.kind in ("read", "write", "update") and event.window is not None:
            state.access(event)
    return state.out
