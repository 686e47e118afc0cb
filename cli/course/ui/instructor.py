"""What instructors see: the table of `course validate`, `course grade`'s progress and class summary."""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

from course import ui
from course.instructor.classrun import ClassRun, Job, Listener, Student
from course.instructor.pace import Pace
from course.ui import LABELS

if TYPE_CHECKING:
    from course.engine.parent.verdict import ExerciseResult
    from course.instructor.results import Record
    from course.instructor.validate import ValidationReport, Verdict


def validation(report: ValidationReport) -> None:
    """One table of verdicts, then every problem as one sentence, then the summary."""
    table = Table(title=f"Validating {report.title}", title_style="bold", expand=False)
    for column in ("#", "exercise", "stub", "solution", "wrong variants", "problems"):
        table.add_column(column, justify="right" if column in ("#", "problems") else "left")
    for ex in report.exercises:
        table.add_row(
            str(ex.position),
            Text(ex.name, style="" if ex.sound else "bold red"),
            _cell(ex.stub),
            _cell(ex.solution),
            _cell(ex.wrong),
            Text(str(len(ex.problems)), style="green" if ex.sound else "bold red"),
        )
    ui.out.print(table)
    for problem in report.problems:
        ui.out.print(Text.assemble(("✗ ", "bold red"), ("course: ", "bold"), problem))
    for ex in report.exercises:
        for problem in ex.problems:
            ui.out.print(Text.assemble(("✗ ", "bold red"), (f"{ex.name}: ", "bold"), problem))
    n_bad = sum(not e.sound for e in report.exercises)
    if report.sound:
        ui.line(f"All {len(report.exercises)} exercise(s) hold.", style="bold green")
    else:
        ui.line(f"{n_bad} of {len(report.exercises)} exercise(s) need work; fix the files named above.", style="bold")


def _cell(verdict: Verdict | None) -> Text:
    """A verdict as a coloured cell; `-` when there was nothing to grade."""
    if verdict is None:
        return Text("-", style="dim")
    return Text(verdict.text, style="green" if verdict.ok else "bold red")


def _clock(seconds: float | None) -> str:
    """Seconds as m:ss (h:mm:ss past an hour); a dash for unknown."""
    if seconds is None:
        return "-:--"
    whole = int(seconds + 0.5)
    hours, rest = divmod(whole, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


class _LeftColumn(ProgressColumn):
    """Time left, from each exercise's measured gradings (`course.instructor.pace`), once there are some."""

    def __init__(self, pace: Pace) -> None:
        super().__init__()
        self.pace = pace

    def render(self, task: Task) -> Text:
        """`about m:ss left`, or what the first minute is for."""
        left = self.pace.left()
        if left is None:
            return Text("the first minute warms the reference solutions", style="dim")
        return Text(f"about {_clock(left)} left", style="cyan")


class Watch:
    """Progress of long instructor work (grading a class, validating): a bar on a terminal with the time
    elapsed and left; one line per item when piped (a log), so a run in CI or under nohup shows life."""

    def __init__(self, what: str, total: int, pace: Pace, enabled: bool = True) -> None:
        self.what, self.total, self.pace, self.done = what, total, pace, 0
        self.started = time.monotonic()
        quiet = not enabled or os.environ.get("COURSE_NO_PROGRESS")
        self.mode = "off" if quiet or total == 0 else "bar" if ui.err.is_terminal else "lines"
        self._progress: Progress | None = None
        self._lock = threading.Lock()

    def __enter__(self) -> Watch:
        """Start the bar, or say what is coming."""
        if self.mode == "bar":
            columns = (TextColumn("{task.description}"), BarColumn(bar_width=20), MofNCompleteColumn(),
                       TimeElapsedColumn(), TextColumn("elapsed ·"), _LeftColumn(self.pace))
            self._progress = Progress(*columns, console=ui.err, transient=True)
            self._progress.__enter__()
            self._task = self._progress.add_task(self.what, total=self.total)
        return self

    def __exit__(self, *exc: object) -> None:
        """Take the bar away."""
        if self._progress is not None:
            self._progress.__exit__(None, None, None)

    def say(self, text: str) -> None:
        """A line of its own when piped (nothing on a terminal, where the bar speaks)."""
        if self.mode == "lines":
            ui.err.print(Text(text), soft_wrap=True, highlight=False)

    def advance(self, item: str, outcome: str = "") -> None:
        """One item is done: move the bar, or log a line with the count, elapsed and left."""
        with self._lock:
            self.done += 1
            done = self.done
        if self._progress is not None:
            self._progress.update(self._task, advance=1, description=f"{self.what} {item}".strip())
        left = self.pace.left()
        tail = f"{_clock(time.monotonic() - self.started)} elapsed" + (f", about {_clock(left)} left"
                                                                       if left is not None else "")
        self.say(f"[{done}/{self.total}] {item}{': ' + outcome if outcome else ''} ({tail})")


class ClassWatch(Listener):
    """`course grade`'s progress: students graded, measured per-exercise times, the warm-up said."""

    def __init__(self, plan: ClassRun, jobs: int, enabled: bool = True) -> None:
        pending = Counter(job.exercise.name for job in plan.jobs)
        self.pace = Pace(pending, jobs or 1)
        self.watch = Watch("grading", len(plan.students), self.pace, enabled)
        self.plan = plan

    def __enter__(self) -> ClassWatch:
        """Start showing progress."""
        self.watch.__enter__()
        busy = len({j.student.entry.student for j in self.plan.jobs})
        self.watch.say(f"grading {len(self.plan.students)} students: {len(self.plan.jobs)} grading(s) to run for "
                       f"{busy} of them; the others have nothing new to grade")
        return self

    def __exit__(self, *exc: object) -> None:
        """Stop showing progress."""
        self.watch.__exit__(*exc)

    def warming(self, references: int) -> None:
        """Say that the reference solutions come first, and why."""
        if references:
            self.watch.say(f"warming the compilation cache with {references} reference solution(s) "
                           "(about the first minute)")

    def reference(self, exercise: str, seconds: float) -> None:
        """A reference's time is the first measure of its exercise."""
        self.pace.measured(exercise, seconds, pending=False)

    def graded(self, job: Job, rec: Record) -> None:
        """Count the grading's time toward its exercise's mean."""
        self.pace.measured(job.exercise.name, rec.duration_s)

    def finished(self, student: Student) -> None:
        """One student is done."""
        self.watch.advance(student.entry.student, f"{self.plan.total(student):g}/{self.plan.max_total:g}")


class ValidationWatch(Watch):
    """`course validate`'s progress over its gradings (stub, solution and each wrong variant)."""

    def validated(self, result: ExerciseResult) -> None:
        """One grading ended: its time counts toward its exercise's mean."""
        self.pace.measured(result.name, result.duration_s)
        self.advance(result.name, LABELS.get(result.status, result.status))


def validation_watch(jobs: list[Any], parallel: int) -> ValidationWatch:
    """The progress of `course validate`'s gradings, `parallel` at a time."""
    return ValidationWatch("validating", len(jobs), Pace(Counter(j.exercise.name for j in jobs), parallel))


def class_report(summary: dict[str, Any], written: list[Path], note: str, used: dict[str, Any] | None = None) -> None:
    """After `course grade`: one row per exercise, the checks the class fails most, what could not be
    graded, isolation, and the files."""
    table = Table(title=f"{summary['course']}: {summary['students']} students", title_style="bold", expand=False)
    for column in ("#", "exercise", "tried", "passed", "failed", "timed out", "not tried", "errors", "mean"):
        table.add_column(column, justify="left" if column == "exercise" else "right")
    for e in summary["exercises"]:
        mean = "-" if e["mean_score"] is None else f"{e['mean_score']:g}/{e['max_score']:g}"
        table.add_row(str(e["position"]), e["name"], str(e["tried"]), str(e["passed"]), str(e["failed"]),
                      str(e["timeout"]), str(e["not_tried"]),
                      Text(str(e["error"]), style="bold magenta" if e["error"] else ""), mean)
    ui.out.print(table)
    mean = "-" if summary["mean_total"] is None else f"{summary['mean_total']:g}"
    ui.line(f"Class mean {mean} of {summary['max_total']:g} points; {summary['graded_now']} student(s) graded "
            f"now, {summary['reused']} unchanged since the last run (means count only those who tried).")
    worst = sorted((c for e in summary["exercises"] for c in e["checks"] if c["failed"]),
                   key=lambda c: -c["failed"])[:3]
    for check in worst:
        ui.labelled(Text(f"{check['failed']} failed", style="bold red"), check["title"], indent=2)
        if check["common_failures"]:
            ui.block(check["common_failures"][0]["message"], indent=6, style="dim")
    _troubles(summary)
    if used:
        ui.line(f"Ran {used['jobs']} grading(s) at once ({used['cpus']} CPU(s), {used['memory_limit_mb']} MiB of "
                f"memory); one grading needed up to {used['per_grading_mb']} MiB, the peak was {used['peak_mb']} MiB.",
                style="dim")
    for path in written:
        ui.line(f"  {path}")
    if note:
        ui.warning(f"no report.html: {note}.")


def _troubles(summary: dict[str, Any]) -> None:
    """What the instructor must look at: isolation off, references failing, entries not graded, absentees."""
    on, off = summary["isolation"]["on"], summary["isolation"]["off"]
    ui.line(f"Isolation: {'; '.join(on)}.", style="dim")
    if off:
        ui.line(f"Off on this machine: {'; '.join(off)}.", style="yellow")
    for name, status in summary.get("references", {}).items():
        if status != "passed":
            ui.warning(f"the reference solution of {name} is {status} under this class's seed ({summary['seed']}); "
                       "check its grader before trusting these scores (`course validate`).")
    if summary["platform_errors"]:
        ui.line(f"The platform failed for {', '.join(summary['platform_errors'])}; their results say so. "
                "Run the same command again to grade them again.", style="bold magenta")
    for bad in summary.get("bad_entries", []):
        label = Text("not whole", style="bold red") if bad.get("graded") else Text("not graded", style="bold red")
        ui.labelled(label, f"{bad['entry']} {bad['reason']}.")
    if summary.get("missing"):
        names = ", ".join(m["student"] for m in summary["missing"])
        ui.labelled(Text("no entry", style="bold yellow"), f"{len(summary['missing'])} student(s) of the roster "
                                                           f"submitted nothing: {names}.")


def stubs_recorded(changed: list[str]) -> None:
    """Say which exercises' stubs were recorded anew by `course validate --record-stubs`."""
    if changed:
        ui.info(f"Recorded the stubs of {', '.join(changed)} in exercises/stubs.lock: untouched copies of "
                  "them are now \"not tried\". Commit that file with the stubs.")
    else:
        ui.info("exercises/stubs.lock already records these stubs; nothing changed.")


def paths_written(lead: str, paths: list[Path], next_step: str) -> None:
    """A line saying what was made, each file, and what to do next."""
    ui.line(lead, style="bold")
    for path in paths:
        ui.line(f"  {path}")
    ui.line(next_step)


def notes(lines: list[str]) -> None:
    """Lines of advice after what was written, one each."""
    for text in lines:
        ui.line(text)
