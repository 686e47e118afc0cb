"""An autograder's time budget: one submission's whole run ends before the platform's timeout.

Gradescope stops a run at its timeout (10 minutes unless the assignment sets more, 40 at most)
and then shows the student 0 and no feedback. So the autograder gives the whole run a budget
under that timeout and spends it one exercise at a time: each exercise may run until its own
limits or until only what the exercises after it are promised is left, whichever comes first. A
grading still running then is stopped like one at a limit: the checks it finished keep their
verdicts, and the one it was in says the budget ran out. Every exercise is promised an equal
share of 70% of the budget, so a submission that loops in every exercise still has each of them
graded (and stopped) before the budget ends, and one that loops in a single exercise leaves the
others most of the budget (`docs/grading.md` gives the figures measured on Gradescope's limits).
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

from course.engine.contain.limits import Deadline
from course.engine.parent import runner
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
PROMISED = 0.7
"""The share of the budget promised to the exercises, equally; the rest goes to whoever needs it first."""
STOPPED = "stopped: the autograder's time budget ran out; this check did not finish"


@dataclass(frozen=True)
class Budget:
    """The seconds one submission's run may take, counted from `started` (a `time.monotonic()`)."""

    total_s: float
    started: float

    @classmethod
    def since(cls, total_s: float, epoch: float | None) -> Budget:
        """A budget counted from `epoch` (seconds since 1970: when run_autograder started, so that Python's
        own start-up counts too), or from now without one."""
        now = time.monotonic()
        return cls(total_s, now if epoch is None else now - min(max(0.0, time.time() - epoch), 60.0))

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


def epoch(text: str) -> float | None:
    """Bash's $EPOCHREALTIME as a number (a locale may write it with a comma); None when unset or odd."""
    try:
        return float(text.replace(",", "."))
    except ValueError:
        return None


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
    from course.engine.contain import protections

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


MARGIN_S = GRADESCOPE_TIMEOUT_S - DEFAULT_BUDGET_S
"""What a budget leaves under the timeout it is given, at least."""
MEASURED = Path("benchmarks", "gradescope.json")
"""Where `benchmarks/bench_gradescope.py` keeps what it measured of this course on Gradescope's limits."""


def check(budget_s: float) -> None:
    """Refuse a budget that Gradescope's longest timeout could not hold with its margin."""
    from course.errors import UsageError

    top = GRADESCOPE_MAX_TIMEOUT_S - MARGIN_S
    if not 30 <= budget_s <= top:
        raise UsageError(f"a budget of {budget_s:g} s cannot be kept: it must be between 30 and {top} s, "
                         f"{MARGIN_S} s under Gradescope's longest timeout ({GRADESCOPE_MAX_TIMEOUT_S // 60} minutes).")


def timeout_minutes(budget_s: float) -> int:
    """The Gradescope timeout to set for a budget: the default, or the budget and its margin, in whole minutes."""
    return max(GRADESCOPE_TIMEOUT_S // 60, -(-int(budget_s + MARGIN_S) // 60))


def settings(course_root: Path, title: str, budget_s: float, points: float | None = None) -> list[str]:
    """What to set on Gradescope's "Autograder Settings" for a bundle of `budget_s`, and what was measured (`points`:
    what the course is worth now, to tell figures measured of an earlier version of it)."""
    minutes = timeout_minutes(budget_s)
    default = " (Gradescope's default)" if minutes * 60 == GRADESCOPE_TIMEOUT_S else ""
    lines = [f"Set in Gradescope's Autograder Settings: timeout {minutes} minutes{default}; "
             f"{GRADESCOPE_CPUS:g} CPU and {GRADESCOPE_MEMORY_MB} MiB of memory (its defaults, which the figures "
             "below were measured with).",
             f"Each submission's run keeps within a budget of {budget_s:g} s and stops what is still running then, "
             "saying so."]
    return lines + measured(course_root, title, points)


KINDS = {"correct": "a full correct submission", "looping": "one looping in every exercise",
         "first_looping": "one looping in its first exercise alone"}


def measured(course_root: Path, title: str, points: float | None = None) -> list[str]:
    """What `benchmarks/bench_gradescope.py` measured of this course, in words; a hint when it was not, and a
    warning when it was measured while the course was worth other than `points`."""
    import json

    try:
        data = json.loads((course_root / MEASURED).read_text(encoding="utf-8"))
        runs = data["runs"] if data.get("course") == title else {}
    except (OSError, ValueError, KeyError, TypeError):
        runs = {}
    said = [f"{KINDS.get(kind, kind)}: {run['wall_s']:g} s (score {run['score']:g} of {run['max_score']:g}, "
            f"peak memory {run.get('peak_mb', '?')} MiB)" for kind, run in runs.items()
            if isinstance(run, dict) and {"wall_s", "score", "max_score"} <= set(run)]
    if not said:
        return [f"Not measured for this course on Gradescope's limits: {MEASURED} is missing; "
                "benchmarks/bench_gradescope.py measures it."]
    when = data.get("measured", "?")
    lines = [f"Measured at {data.get('cpus', GRADESCOPE_CPUS):g} CPU and {data.get('memory_mb', GRADESCOPE_MEMORY_MB)} "
             f"MiB on {when}, with a budget of {data.get('budget_s', '?')} s: " + "; ".join(said) + "."]
    then = {run["max_score"] for run in runs.values() if isinstance(run, dict) and "max_score" in run}
    if points is not None and then and then != {points}:
        lines.append(f"Those figures are of an earlier version of this course, worth {max(then):g} points (it is worth "
                     f"{points:g} now): run benchmarks/bench_gradescope.py again to measure this one.")
    return lines
