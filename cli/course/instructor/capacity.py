"""How many gradings a class runs at once: the CPUs the process may use, capped so the peak fits in memory.

The CPUs come from the process's affinity and any cgroup quota (`course.engine.contain.cgroups.cpu_limit`),
not from `os.cpu_count()`, which counts the whole machine. Memory is the cgroup's limit
(`memory.max`), or the machine's when there is none. What one grading costs is measured while the
class is graded: a gauge samples the memory in use and divides what the gradings add by how many
run, keeping the largest share seen; the number of gradings at once is lowered (or raised again,
up to the CPUs) so that the largest share, with headroom, fits in what is left. A grading in
several processes (an exercise's `processes = N`: a cohort) holds N slots, one per process.
`--jobs` overrides all of it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from course.engine.contain import cgroups

HEADROOM = 1.3
"""Each grading is assumed to need this much more than the most it was seen to use."""
FIRST_GUESS = 600 * 2**20
"""What a grading is assumed to need before any has been measured (a JAX process with its checks)."""
SAMPLE_S = 0.2


def plan(cpus: int, limit: int, base: int, per_grading: int) -> int:
    """Gradings at once: at most `cpus`, and no more than fit in `limit` beside `base` (at least 1)."""
    room = max(0, limit - base)
    return max(1, min(cpus, int(room // max(1, int(per_grading * HEADROOM)))))


@dataclass
class Budget:
    """The machine's limits as this process sees them."""

    cpus: int
    limit: int
    """Bytes the gradings and this process may hold together."""
    cgroup: bool
    """True when `limit` is a cgroup's, whose own usage counter is then read."""

    @classmethod
    def detect(cls) -> Budget:
        """This process's CPUs and memory limit."""
        limit = cgroups.memory_limit()
        return cls(cgroups.cpu_limit(), limit or cgroups.physical_memory(), limit is not None)

    def used(self) -> int:
        """Bytes in use now, counted the way the limit counts them."""
        used = cgroups.memory_used() if self.cgroup else None
        return used if used is not None else cgroups.tree_resident(os.getpid())


class Slots:
    """A limit on gradings at once that can change while they run (a semaphore with a movable size)."""

    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self.busy = 0
        self._cond = threading.Condition()

    def resize(self, size: int) -> None:
        """Allow `size` gradings at once from now on (those running are left to finish)."""
        with self._cond:
            self.size = max(1, size)
            self._cond.notify_all()

    @contextmanager
    def slot(self, count: int = 1) -> Iterator[None]:
        """Hold `count` slots while the block runs (a cohort's processes, one each), waiting until they
        are free; more than there are waits for all of them, so it runs alone rather than never."""
        with self._cond:
            self._cond.wait_for(lambda: self.busy + count <= self.size or self.busy == 0)
            self.busy += count
        try:
            yield
        finally:
            with self._cond:
                self.busy -= count
                self._cond.notify_all()


class Gauge:
    """Measures what one grading costs while the class is graded, and resizes `slots` to fit the budget."""

    def __init__(self, budget: Budget, slots: Slots, fixed: bool = False) -> None:
        self.budget, self.slots, self.fixed = budget, slots, fixed
        self.base = budget.used()
        self.per_grading = 0
        self.peak = self.base
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True, name="course-memory-gauge")

    def __enter__(self) -> Gauge:
        """Start sampling; size the slots on the first guess."""
        if not self.fixed:
            self.slots.resize(plan(self.budget.cpus, self.budget.limit, self.base, FIRST_GUESS))
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        """Stop sampling."""
        self._stop.set()
        self._thread.join(timeout=2)

    def sample(self) -> None:
        """One reading: the share of each running grading, and the slots resized to the largest share seen."""
        used = self.budget.used()
        self.peak = max(self.peak, used)
        running = self.slots.busy
        if running:
            self.per_grading = max(self.per_grading, (used - self.base) // running)
        if not self.fixed and self.per_grading:
            self.slots.resize(plan(self.budget.cpus, self.budget.limit, self.base, self.per_grading))

    def _watch(self) -> None:
        """Sample until stopped."""
        while not self._stop.wait(SAMPLE_S):
            self.sample()


def default_jobs() -> int:
    """What `--jobs 0` means before memory is measured: the CPUs this process may use."""
    return cgroups.cpu_limit()
