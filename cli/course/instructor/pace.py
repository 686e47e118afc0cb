"""How long a class has left, from the measured time of each exercise's gradings.

Exercises differ by a factor of several (a kernel checked with property tests against a one-line
donation), so the time left is the sum, over the gradings still to run, of their own exercise's
mean so far, divided by the gradings that run at once. The reference solutions, graded first to
warm the shared compilation cache, give each exercise its first measure; an exercise not yet
measured counts at the mean of all.
"""

from __future__ import annotations

import threading
from collections import Counter


class Pace:
    """Measured seconds per grading, per exercise; what is left, in seconds."""

    def __init__(self, pending: Counter[str], parallel: int) -> None:
        self.pending = Counter(pending)
        self.parallel = max(1, parallel)
        self._sum: Counter[str] = Counter()
        self._count: Counter[str] = Counter()
        self._lock = threading.Lock()

    def measured(self, exercise: str, seconds: float, *, pending: bool = True) -> None:
        """One grading of `exercise` took `seconds`; with `pending`, it was one of those still to run."""
        with self._lock:
            self._sum[exercise] += seconds
            self._count[exercise] += 1
            if pending and self.pending[exercise] > 0:
                self.pending[exercise] -= 1

    @property
    def warm(self) -> bool:
        """True once something has been measured, so an estimate means something."""
        return bool(self._count)

    def left(self) -> float | None:
        """Seconds left, or None before anything was measured."""
        with self._lock:
            if not self._count:
                return None
            overall = sum(self._sum.values()) / sum(self._count.values())
            mean = {name: self._sum[name] / self._count[name] for name in self._count}
            work = sum(n * mean.get(name, overall) for name, n in self.pending.items())
        return work / self.parallel
