"""The check a grading is in and the CPU time it has used: shown while it runs, and held to its own limit.

The grading process says when each check starts and ends (`course.engine.child.plugin`, events for display);
the parent reads the CPU time of the process tree as it waits (`course.engine.parent.isolation`, its `watch`).
From the two it knows which check is running and what that check has used: a terminal shows it, and a
check past `Budget.check_cpu_s` is stopped there, so one endless loop costs that, not the grading's
whole `timeout_s`. Events may be wrong (learner code could write them): the whole grading's limits
still hold whatever they say.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace

from course.engine.contain import system
from course.engine.contain.limits import Budget
from course.engine.parent.verdict import RUNNING, CheckEvent

POLL_S = 0.5
"""How often the process tree's CPU time is read (a walk of the process table)."""
OVERSHOOT_S = 2 * POLL_S
"""How far past its limit a check's CPU time can be when it is stopped: its count starts at the first reading
after the check's start, and the reading that finds it past the limit comes up to one poll after."""
SHOW_EVERY_S = 1.0
"""How often a running check's CPU time is passed on for display."""
STOPPED = "the check used its own CPU time limit"
"""The sentence `watch` gives the waiting loop; the verdict is worded from `limits.reason("check", ...)`."""
HEAVY_IMPORT_MB = 64.0
"""An import of the learner's file this large is named when a grading runs out of memory."""


def what_holds(import_mb: float) -> str:
    """A sentence naming the learner's import as what holds memory, when it is large; else ''."""
    if import_mb < HEAVY_IMPORT_MB:
        return ""
    return (f" Importing your file takes {import_mb:.0f} MiB by itself: what it makes at module level (a table, an "
            "array) is held while every check runs; make it smaller, or make it inside the function that needs it.")


class Stopwatch:
    """Follows one grading's checks and CPU time; `raw_event` takes its events, `watch` is polled with its pid."""

    def __init__(self, exercise: str, budget: Budget, on_event: Callable[[CheckEvent], None] | None = None, *,
                 cpu: Callable[[int], float] = system.tree_cpu_s, clock: Callable[[], float] = time.monotonic) -> None:
        self.exercise, self.budget, self.on_event = exercise, budget, on_event
        self.cpu, self.clock = cpu, clock
        self.running: CheckEvent | None = None
        self.stopped: CheckEvent | None = None
        """The check stopped at its own limit, if one was."""
        self.import_mb = 0.0
        """How much one import of the learner's file grew the grading, as the grading last said."""
        self._start_cpu: float | None = None
        self._next_poll = self._next_show = 0.0
        self._lock = threading.Lock()

    def raw_event(self, raw: dict) -> None:
        """One event line from the grading: note a check starting or ending, and pass it on."""
        event = CheckEvent.parse(self.exercise, raw)
        if event is None:
            return
        if isinstance(raw.get("import_mb"), int | float):
            self.import_mb = float(raw["import_mb"])
        with self._lock:
            self.running = event if event.status == RUNNING else None
            self._start_cpu = None  # read at the next poll: the CPU time the check starts from
        if self.on_event is not None:
            self.on_event(event)

    def watch(self, pid: int) -> str:
        """Polled as the grading runs: STOPPED once the running check is past its own limit, else ''."""
        now = self.clock()
        if now < self._next_poll or self.running is None:  # between checks there is nothing to read
            return ""
        self._next_poll = now + POLL_S
        used = self.cpu(pid)  # a walk of the process table: read twice a second, not at every poll
        with self._lock:
            running = self.running
            if running is None:
                return ""
            if self._start_cpu is None:
                self._start_cpu = used
            spent = used - self._start_cpu
            if self.budget.check_cpu_s and spent > self.budget.check_cpu_s:
                self.stopped = running
                return STOPPED
        if self.on_event is not None and now >= self._next_show:
            self._next_show = now + SHOW_EVERY_S
            self.on_event(replace(running, cpu_s=spent, budget_s=self.budget.check_cpu_s))
        return ""
