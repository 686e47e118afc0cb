"""The parent's view of the running check: which it is, the CPU time it has used, and its own limit."""

from __future__ import annotations

from course.engine.contain.limits import Budget
from course.engine.parent.stopwatch import POLL_S, SHOW_EVERY_S, STOPPED, Stopwatch, what_holds
from course.engine.parent.verdict import CheckEvent


class Clock:
    """Time and CPU time the test moves by hand."""

    def __init__(self) -> None:
        self.now, self.cpu = 100.0, 5.0

    def tick(self, cpu: float) -> None:
        """A poll (and a display) later, with `cpu` more seconds of CPU used."""
        self.now += max(POLL_S, SHOW_EVERY_S)
        self.cpu += cpu


def test_a_check_is_followed_from_its_start_and_stopped_past_its_own_limit() -> None:
    """CPU time counts from the check's start, not the grading's; the display hears of it; past the
    check's own limit `watch` says STOPPED and names the check; an ended check is no longer timed."""
    clock, heard = Clock(), []
    watch = Stopwatch("ex", Budget(60, 300, check_cpu_s=2), heard.append, cpu=lambda pid: clock.cpu,
                      clock=lambda: clock.now)
    assert watch.watch(1) == ""  # no check running: nothing read
    watch.raw_event({"id": "test_a", "title": "A", "status": "running", "import_mb": 80})
    assert watch.import_mb == 80 and heard[-1].status == "running"
    assert watch.watch(1) == ""  # the start: 5 s used before it do not count
    clock.tick(1.5)
    assert watch.watch(1) == ""
    assert heard[-1] == CheckEvent("ex", "test_a", "A", "running", cpu_s=1.5, budget_s=2)
    watch.raw_event({"id": "test_a", "title": "A", "status": "passed"})
    clock.tick(10)
    assert watch.watch(1) == "" and watch.stopped is None  # between checks, nothing is timed
    watch.raw_event({"id": "test_b", "title": "B", "status": "running"})
    watch.watch(1)
    clock.tick(2.5)
    assert watch.watch(1) == STOPPED and watch.stopped is not None and watch.stopped.id == "test_b"


def test_without_a_limit_of_its_own_a_check_is_only_shown() -> None:
    """A budget without `check_cpu_s` (0) never stops a check here: the grading's limit does."""
    clock = Clock()
    watch = Stopwatch("ex", Budget(60, 300), cpu=lambda pid: clock.cpu, clock=lambda: clock.now)
    watch.raw_event({"id": "t", "title": "T", "status": "running"})
    watch.watch(1)
    clock.tick(1000)
    assert watch.watch(1) == ""


def test_a_large_import_is_named_as_what_holds_memory() -> None:
    """Only an import large enough to matter is named."""
    assert what_holds(10) == ""
    assert "Importing your file takes 700 MiB by itself" in what_holds(700)
