"""What instructors see: the table of `course validate`."""

from __future__ import annotations

from typing import TYPE_CHECKING

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
