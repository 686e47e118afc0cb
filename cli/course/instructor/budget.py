"""An autograder's time budget: one submission's whole run ends before the platform's timeout.

Gradescope stops a run at its timeout (10 minutes unless the assignment sets more, 40 at most)
and then shows the student 0 and no feedback. So the autograder gives the whole run a budget
under that timeout and spends it one exercise at a time: each exercise may run until its own
limits or until only what the exercises after it are promised is left, whichever comes first. A
grading still running then is stopped like one at a limit: the checks it finished keep their
verdicts, and the one it was in says the budget ran out. Every exercise is promised an equal
share of half the budget, so a submission that loops in every exercise still has each of them
graded (and stopped) before the budget ends, and one that loops in a single exercise leaves the
others all the time they need.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from course.engine import runner
from course.engine.limits import Deadline
from course.instructor.classrun import ClassRun, Job
from course.instructor.results import Record, record

GRADESCOPE_TIMEOUT_S = 600
"""Gradescope's default timeout for one submission's run ("Autograder Settings": 10 minutes)."""
GRADESCOPE_MAX_TIMEOUT_S = 2400
"""The most Gradescope allows (40 minutes)."""
GRADESCOPE_CPUS = 0.5
"""The CPUs Gradescope gives each run unless the assignment asks for more."""
GRADESCOPE_MEMORY_MB = 768
"""Gradescope's default memory limit for one run's container."""
DEFAULT_BUDGET_S = 480
"""A run's budget by default: two minutes under Gradescope's default timeout, for the container's
start, Python's and the course's imports, and a machine busier than the one it was measured on."""
PROMISED = 0.5
"""The share of the budget promised to the exercises, equally; the rest goes to whoever needs it first."""
STOPPED = "stopped: the autograder's time budget ran out; this check did not finish"


@dataclass(frozen=True)
class Budget:
    """The seconds one submission's run may take, counted from `started` (a `time.monotonic()`)."""

    total_s: float
    started: float

    @property
    def end(self) -> float:
        """The moment the run must be done by."""
        return self.started + self.total_s

    def promise(self, exercises: int) -> float:
        """The seconds each of `exercises` exercises is promised."""
        return self.total_s * PROMISED / max(1, exercises)

    def deadline(self, later: int, exercises: int) -> Deadline:
        """The deadline of an exercise graded with `later` exercises still to grade after it."""
        return Deadline(self.end - later * self.promise(exercises), STOPPED)

    def left(self) -> float:
        """Seconds left of the budget (never below 0)."""
        return max(0.0, self.end - time.monotonic())


def grade_within(plan: ClassRun, budget: Budget, after_each: Callable[[list[Job]], None]) -> None:
    """Grade `plan`'s jobs one after another within `budget`, each into its student's records;
    `after_each` is called first and after every exercise, with the jobs not graded yet."""
    jobs = list(plan.jobs)
    after_each(jobs)
    with _engine(plan) as (scratch, worker, confinement):
        for i, job in enumerate(list(jobs)):
            deadline = budget.deadline(len(jobs) - i - 1, len(jobs))
            rec = _grade(job, plan.seed, scratch, worker, confinement, deadline)
            job.student.records[job.exercise.name] = rec
            job.student.pending -= 1
            after_each(jobs[i + 1:])


@contextmanager
def _engine(plan: ClassRun) -> Iterator[tuple[Path, Any, Any]]:
    """A scratch folder for private copies, a warm worker, and the sandbox where the machine has one.
    No compilation cache: one student's exercises share no program, so it would only cost time."""
    from course.engine import protections

    scratch = Path(tempfile.mkdtemp(prefix="course-autograder-"))
    worker = runner.start_worker() if len(plan.jobs) > 1 else None
    try:
        yield scratch, worker, protections.confinement() if plan.protections.active else None
    finally:
        if worker is not None:
            worker.close()
        shutil.rmtree(scratch, ignore_errors=True)


def _grade(job: Job, seed: int, scratch: Path, worker: Any, confinement: Any, deadline: Deadline) -> Record:
    """Grade one submitted file from a private copy, stopped at `deadline` if it still runs then."""
    stage = Path(tempfile.mkdtemp(dir=scratch))
    private = stage / f"{job.exercise.name}.py"
    private.write_bytes(job.data)
    try:
        result = runner.grade(job.exercise, private, seed=seed, worker=worker, hidden=True, sandbox=confinement,
                              deadline=deadline)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return record(job.exercise, result, rel=job.rel, data=job.data, private=str(private), note=job.note)
