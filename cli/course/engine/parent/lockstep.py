"""The processes of a cohort followed in lockstep: where each is, and when they hang waiting on each other.

Each grading process of a multi-process exercise (`course.engine.parent.cohort`) announces the steps it
enters; a `Watch` keeps them, shows a check once every process has ended it (with the worst
verdict), and tells the runner when the cohort should end: once each has reported, or when they
stop moving while in different steps (one waits in a collective the other never entered).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from course.engine.contain import system
from course.engine.parent import tree
from course.engine.parent.verdict import NOT_RUN
from course.engine.wire.report import RUNNING

__all__ = ["HANG_S", "MOVING_CPU_S", "RANK", "SAMPLE_S", "Watch"]

HANG_S = 10.0
"""Processes in different steps with no progress for this long are stuck waiting on each other."""
MOVING_CPU_S = 0.25
"""CPU seconds a process must burn within HANG_S to count as moving (importing JAX, computing); one waiting
in a collective burns about 0.05 s in that time, one importing JAX at a load of 40 on 2 cores about 0.5 s."""
SAMPLE_S = 1.0
# How bad a check's status is, worst first: a cohort shows (and counts) the worst of its processes'.
RANK = {"error": 0, "failed": 1, NOT_RUN: 2, "skipped": 3, "passed": 4}


@dataclass
class Watch:
    """Where each process is, from the steps it announces, and whether the cohort should end."""

    count: int
    forward: Callable[[dict], None] | None = None
    steps: list[str] = field(default_factory=list)
    finished: set[int] = field(default_factory=set)
    ended: dict[int, int | None] = field(default_factory=dict)
    reason: str = ""
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _last: float = field(default_factory=time.monotonic)
    _cpu: dict[int, tuple[float, float]] = field(default_factory=dict)
    address: str = ""
    """Where the coordinator of these processes listens (set for judges, which join one another)."""
    partners: dict[int, int] = field(default_factory=dict)
    """Per process, another pid whose CPU time is its progress too (a judge's executor computes for it)."""
    _checks: dict[str, list[dict]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.steps = ["starting"] * self.count

    def event(self, index: int, raw: dict) -> None:
        """One line from process `index`: a step it entered, or a check it ended (shown once all have)."""
        with self._lock:
            self._last = time.monotonic()
            if isinstance(raw.get("step"), str):
                self.steps[index] = raw["step"]
                if raw.get("finished") is True:
                    self.finished.add(index)
                return
            if raw.get("status") == RUNNING:
                return  # a check starting in one process: the cohort shows checks once all have ended them
            seen = self._checks.setdefault(str(raw.get("id")), [])
            seen.append(raw)
            ready = len(seen) == self.count
        if ready and self.forward is not None:
            self.forward(min(seen, key=lambda r: RANK.get(str(r.get("status")), 0)))

    def end(self, index: int, returncode: int | None) -> None:
        """Process `index` has ended (its thread is done with it)."""
        with self._lock:
            self.ended[index] = returncode
            self._last = time.monotonic()

    def __call__(self, index: int, pid: int) -> str:
        """For process `index` (pid `pid`): FINISHED once all have reported, the hang's reason, or ''."""
        with self._lock:
            if self.reason:
                return self.reason
            if all(i in self.finished or i in self.ended for i in range(self.count)):
                return tree.FINISHED
            now = time.monotonic()
            self._sample(index, pid, now)
            places = [self.where(i) for i in range(self.count)]
            if now - self._last >= HANG_S and len(set(places)) > 1:
                self.reason = self._hang(places)
            return self.reason

    def _sample(self, index: int, pid: int, now: float) -> None:
        """Count CPU time a process burns as progress (checked once a SAMPLE_S)."""
        at, mark = self._cpu.get(index, (0.0, -1.0))
        if now - at < SAMPLE_S:
            return
        cpu = system.tree_cpu_s(pid) + (system.tree_cpu_s(self.partners[index]) if index in self.partners else 0.0)
        if mark < 0 or cpu - mark >= MOVING_CPU_S:
            self._cpu[index] = (now, cpu)
            if mark >= 0:
                self._last = now
        else:
            self._cpu[index] = (now, mark)

    def where(self, index: int) -> str:
        """Where process `index` is: its step, or how it ended."""
        if index in self.finished:
            return "finished"
        if index in self.ended:
            code = self.ended[index]
            return f'ended (exit code {code}) in "{self.steps[index]}"'
        return f'in "{self.steps[index]}"'

    def _hang(self, places: list[str]) -> str:
        """The sentence for processes that wait on each other, saying where each was."""
        where = ", ".join(f"process {i} {p}" for i, p in enumerate(places))
        return (f"the {self.count} processes stopped making progress for {HANG_S:.0f} s in different places: "
                f"{where}. Every process must run the same collectives in the same order, on the same global "
                "shapes: one that skips a collective (or computes only on `jax.process_index() == 0`), or "
                "ends early, leaves the others waiting for it")
