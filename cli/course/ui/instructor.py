"""What instructors see: the table of `course validate`, `course grade`'s progress and class summary."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from course import ui

if TYPE_CHECKING:
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


class _RateColumn(ProgressColumn):
    """Students graded per minute, from rich's own running estimate."""

    def render(self, task: Task) -> Text:
        """The rate, or a dash before the first student is done."""
        speed = task.finished_speed or task.speed
        return Text(f"{speed * 60:.1f}/min" if speed else "-/min", style="cyan")


@contextmanager
def grading_progress(total: int, enabled: bool = True) -> Iterator[Callable[[str], None]]:
    """A bar of students graded, with the rate and the time left; `advance(student)` moves it on."""
    if not enabled or not ui.err.is_terminal or os.environ.get("COURSE_NO_PROGRESS"):
        yield lambda _student="": None
        return
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("students"),
        _RateColumn(),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=ui.err, transient=True) as progress:
        task = progress.add_task("grading", total=total)
        yield lambda student="": progress.update(task, advance=1, description=f"graded {student}".strip())


def class_report(summary: dict[str, Any], written: list[Path], note: str) -> None:
    """After `course grade`: one row per exercise, the checks the class fails most, isolation, and the files."""
    table = Table(title=f"{summary['course']}: {summary['students']} students", title_style="bold", expand=False)
    for column in ("#", "exercise", "passed", "failed", "not tried", "errors", "mean"):
        table.add_column(column, justify="left" if column == "exercise" else "right")
    for e in summary["exercises"]:
        mean = "-" if e["mean_score"] is None else f"{e['mean_score']:g}/{e['max_score']:g}"
        table.add_row(str(e["position"]), e["name"], str(e["passed"]), str(e["failed"] + e["timeout"]),
                      str(e["not_tried"]), Text(str(e["error"]), style="bold magenta" if e["error"] else ""), mean)
    ui.out.print(table)
    mean = summary["mean_total"]
    ui.line(f"Class mean {mean:g} of {summary['max_total']:g} points; {summary['graded_now']} student(s) graded "
            f"now, {summary['reused']} unchanged since the last run.")
    worst = sorted((c for e in summary["exercises"] for c in e["checks"] if c["failed"]),
                   key=lambda c: -c["failed"])[:3]
    for check in worst:
        ui.labelled(Text(f"{check['failed']} failed", style="bold red"), check["title"], indent=2)
        if check["common_failures"]:
            ui.block(check["common_failures"][0]["message"], indent=6, style="dim")
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
    for path in written:
        ui.line(f"  {path}")
    if note:
        ui.warning(f"no report.html: {note}.")


def paths_written(lead: str, paths: list[Path], next_step: str) -> None:
    """A line saying what was made, each file, and what to do next."""
    ui.line(lead, style="bold")
    for path in paths:
        ui.line(f"  {path}")
    ui.line(next_step)
