"""DMA semaphores: which waits answer which copies, counted in bytes the way a TPU counts them.

A DMA semaphore counts bytes: each copy adds the bytes it moves when it lands, and each
`.wait()` waits for the bytes of its own descriptor and takes them away. The starts and waits
that `course.grading.observe.kernels.memory_walk` found are replayed in program order: a wait takes bytes from
the oldest starts on its semaphore, a start or wait inside a loop of known length (a static
`fori_loop`, the grid) counts once per turn, and what a wait inside a loop finds no start for
answers the starts later in that loop, for its next turn (double buffering). A start under
`pl.when` need not run every turn, so it is counted once. A wait left with bytes that no start
provides never returns: on a TPU the kernel hangs there, and the TPU interpreter waits forever.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from course.grading.observe.kernels.memory_walk import DmaEvent, MemoryAccess, RefInfo
from course.grading.observe.traces.jaxprs import region_text

__all__ = ["Dma", "StuckWait", "match_waits", "one_semaphore", "stuck_waits"]


@dataclass(frozen=True)
class Dma:
    """One `dma_start`: where it copies from and to, and whether it is waited before use."""

    src: RefInfo
    dst: RefInfo
    sem: RefInfo | None
    dst_region: Any
    line: int | None
    order: int
    waited: bool = False
    wait_line: int | None = None
    read_before_wait: MemoryAccess | None = None
    nbytes: int | None = None  # bytes one copy moves; None when the shapes are not static
    src_region: Any = None  # the part of the source it reads, as `dst_region`
    times: int = 1  # how many times the start runs: the lengths of the loops around it
    missing: int = 0  # bytes started that no wait takes: the copies that never land
    followed: bool = False  # some wait on its semaphore comes after it (or in a loop around both)
    sem_region: Any = None  # the element of a semaphore array it signals (`sems.at[0]`)

    @property
    def same_dtype(self) -> bool:
        """Whether source and destination have one dtype (a DMA moves bytes, it does not convert)."""
        return self.src.dtype == self.dst.dtype

    def describe(self) -> str:
        """'the DMA at line 12 from `x_hbm_ref` (any, ...) into `buf` (vmem, ...)'."""
        where = f" at line {self.line}" if self.line else ""
        return f"the DMA{where} from {self.src.describe()} into {self.dst.describe()}"


def match_waits(starts: list[DmaEvent], waits: list[DmaEvent], accesses: list[MemoryAccess]) -> list[Dma]:
    """Count each semaphore's bytes in program order; find reads of each destination before its wait.

    A wait takes the bytes of its own descriptor from the oldest starts on its semaphore, so one
    wait for one strip leaves the other strips' copies unwaited. What a wait inside a loop finds
    no start for answers the starts later in that loop (the next turn's copy: double buffering).
    """
    left, answer, _ = _count(starts, waits)
    return [_dma_of(s, answer.get(s.order), left[s.order], accesses, _may_answer(s, waits)) for s in starts]


@dataclass(frozen=True)
class StuckWait:
    """A `.wait()` for more bytes than any copy started on its semaphore: on a TPU it never returns."""

    line: int | None
    nbytes: int  # the bytes it waits for that no start provides
    sem: RefInfo | None
    sem_region: Any = None  # the element of a semaphore array it waits on (`sems.at[0]`)

    def sem_text(self) -> str:
        """'`sems.at[0]`' or '`sem`': the semaphore it waits on, as the kernel spells it; '' if unknown."""
        if self.sem is None:
            return ""
        at = region_text(self.sem_region, self.sem.shape) if self.sem.shape else "..."
        return f"`{self.sem.name}`" if at == "..." else f"`{self.sem.name}.at[{at}]`"


def stuck_waits(starts: list[DmaEvent], waits: list[DmaEvent]) -> list[StuckWait]:
    """The waits left waiting for bytes no start provides, where every count on the semaphore is known.

    A semaphore with a start or wait under `pl.when`, or inside a loop of unknown length, is left
    alone: how often those run depends on values the walk does not know.
    """
    _, _, unused = _count(starts, waits)
    events = starts + waits
    def known(w: DmaEvent) -> bool:
        return not any(_same_sem(e, w) and (e.optional or any(n is None for _, n in e.loops)) for e in events)
    return [StuckWait(w.line, unused[w.order], w.sem, w.sem_region) for w in waits if unused.get(w.order) and known(w)]


def _count(starts: list[DmaEvent], waits: list[DmaEvent]) -> tuple[dict[int, int], dict[int, DmaEvent], dict[int, int]]:
    """Run the semaphores' byte counts: bytes each start has left, the wait that answered it, bytes each wait lacks."""
    # A start under `pl.when` may run on one turn only; count it once, so a wait need not cover more.
    left = {s.order: _units(s) * (1 if s.optional else s.times) for s in starts}
    answer: dict[int, DmaEvent] = {}
    unused: dict[int, int] = {}
    for event in sorted(starts + waits, key=lambda e: e.order):
        if event.kind == "start":
            for wait in waits:  # a wait earlier in a loop around this start answers its next turn
                if (unused.get(wait.order) and wait.order < event.order and _same_sem(event, wait)
                        and wait.loop_ids() & event.loop_ids() and left[event.order]):
                    took = min(unused[wait.order], left[event.order])
                    left[event.order] -= took
                    unused[wait.order] -= took
                    answer.setdefault(event.order, wait)
            continue
        budget = _units(event) * event.times
        for s in starts:
            if s.order < event.order and _same_sem(s, event) and left[s.order] and budget:
                took = min(budget, left[s.order])
                left[s.order] -= took
                budget -= took
                answer[s.order] = event
        unused[event.order] = budget
    return left, answer, unused


def _may_answer(start: DmaEvent, waits: list[DmaEvent]) -> bool:
    """Whether some wait on the start's semaphore comes after it or shares a loop with it."""
    return any(_same_sem(start, w) and (w.order > start.order or w.loop_ids() & start.loop_ids())
               for w in waits)


def _units(event: DmaEvent) -> int:
    """What one run of a start adds, or of a wait takes: its bytes, or 1 when they are unknown."""
    return event.nbytes if event.nbytes else 1


def _dma_of(s: DmaEvent, wait: DmaEvent | None, missing: int, accesses: list[MemoryAccess], answerable: bool) -> Dma:
    """The Dma of one start, given the wait that answered it and the bytes no wait took.

    A start under `pl.when` gets the benefit of the doubt when a wait could answer it: whether it
    runs on the turn that wait covers depends on values the walk does not know.
    """
    waited = missing == 0 or (s.optional and answerable)
    until = wait.order if wait is not None and wait.order > s.order else None
    early = next((a for a in accesses if a.ref.index == s.dst.index and a.kind != "store"
                  and a.order > s.order and (until is None or a.order < until)
                  and _overlap(a.region, s.dst_region)), None)
    return Dma(src=s.src, dst=s.dst, sem=s.sem, dst_region=s.dst_region, line=s.line, order=s.order,
               waited=waited, wait_line=wait.line if wait is not None else None, read_before_wait=early,
               nbytes=s.nbytes, src_region=s.src_region, times=s.times, missing=0 if waited else missing,
               followed=answerable, sem_region=s.sem_region)


def _same_sem(start: DmaEvent, wait: DmaEvent) -> bool:
    """A wait answers a start when both use one semaphore (or, lacking one, one destination).

    Two elements of one semaphore array (`sems.at[0]`, `sems.at[1]`) are two semaphores when
    both indices are static; a dynamic index may be either, so it is taken as the same.
    """
    if start.sem is not None and wait.sem is not None:
        return start.sem.index == wait.sem.index and not _disjoint(start.sem_region, wait.sem_region)
    return start.dst.index == wait.dst.index


def one_semaphore(a: Dma, b: Dma) -> bool:
    """Whether two matched DMAs signal one semaphore (or, lacking one, write one destination)."""
    if a.sem is not None and b.sem is not None:
        return a.sem.index == b.sem.index and not _disjoint(a.sem_region, b.sem_region)
    return a.dst.index == b.dst.index


def _disjoint(a: Any, b: Any) -> bool:
    """Whether two static regions certainly share no element; an unknown or dynamic one may share."""
    if a is None or b is None or len(a) != len(b):
        return False
    return any(ka is None and kb is None and loa is not None and lob is not None and not (loa < hib and lob < hia)
               for (ka, loa, hia), (kb, lob, hib) in zip(a, b, strict=True))


def _overlap(a: Any, b: Any) -> bool:
    """Whether two regions certainly share an element; unknown or differently dynamic ones do not."""
    if a is None or b is None or len(a) != len(b):
        return False
    for (ka, loa, hia), (kb, lob, hib) in zip(a, b, strict=True):
        if loa is None or lob is None or ka != kb or not (loa < hib and lob < hia):
            return False
    return True
