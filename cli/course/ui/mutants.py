"""What `course validate --mutants` shows: its progress, a table of scores, and every survivor's diff."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from rich import box
from rich.table import Table
from rich.text import Text

from course import ui
from course.instructor.pace import Pace
from course.ui.instructor import ValidationWatch

if TYPE_CHECKING:
    from course.instructor.mutants import Mutant
    from course.instructor.mutation import ExerciseMutation, MutationReport

COLUMNS = ("#", "exercise", "mutants", "killed", "survived", "equiv.", "timeout", "no compile", "error", "score")
SHORT = ("#", "exercise", "all", "kill", "surv", "eqv", "t/o", "n/c", "err", "score")
"""The headers of a terminal too narrow for `COLUMNS` (80 columns and less), explained by `LEGEND` below the table."""
LEGEND = ("all: mutants, kill: killed, surv: survived, eqv: equivalent, t/o: timed out, n/c: not compiling, "
          "err: the grader failed itself.")
LAYOUTS: tuple[dict[str, Any], ...] = (
    {"headers": COLUMNS},
    {"headers": SHORT, "box": box.SIMPLE_HEAD, "show_edge": False, "padding": (0, 1), "collapse_padding": True},
    {"headers": SHORT, "box": box.SIMPLE_HEAD, "show_edge": False, "padding": 0},
)
"""From the roomiest to the tightest: the first whose table fits the terminal is shown (the last at worst)."""


def watch(planned: dict[str, list[Mutant]], parallel: int, enabled: bool = True) -> ValidationWatch:
    """Progress over the gradings to come: each exercise's solution, then its mutants."""
    pending = Counter({name: len(found) + 1 for name, found in planned.items()})
    return ValidationWatch("mutants", sum(pending.values()), Pace(pending, parallel), enabled)


def report(run: MutationReport) -> None:
    """The table, then each exercise's survivors with their diffs, then what to do."""
    unbounded = ui.out.options.update_width(10**4)  # a measure within the width would say it fits, cut
    for layout in LAYOUTS:
        table = _table(run, **layout)
        if ui.out.measure(table, options=unbounded).maximum <= ui.out.width:
            break
    ui.out.print(table)
    if layout["headers"] is SHORT:
        ui.out.print(Text(LEGEND, style="dim"))
    for ex in run.exercises:
        _details(ex)
    _summary(run)


def _table(run: MutationReport, headers: tuple[str, ...], **style: Any) -> Table:
    """One row per exercise under these headers, every cell whole (`style`: rich's box and padding)."""
    table = Table(title=f"Mutants of {run.title}'s solutions", title_style="bold", expand=False, **style)
    for column in headers:
        table.add_column(column, justify="left" if column == "exercise" else "right", no_wrap=True)
    for ex in run.exercises:
        c = ex.counts
        bad = bool(ex.survivors or ex.problems)
        table.add_row(str(ex.position), Text(ex.name, style="bold red" if bad else ""), str(len(ex.outcomes)),
                      str(c["killed"]), Text(str(c["survived"]), style="bold red" if c["survived"] else ""),
                      str(c["equivalent"]), str(c["timeout"]), str(c["not_compiling"]),
                      Text(str(c["error"]), style="bold magenta" if c["error"] else ""), _score(ex))
    return table


def _score(ex: ExerciseMutation) -> Text:
    """The mutation score as a percentage, green at 100."""
    score = ex.score
    if score is None:
        return Text("-", style="dim")
    return Text(f"{100 * score:.0f}%", style="green" if score == 1 else "bold red")


def _details(ex: ExerciseMutation) -> None:
    """An exercise's problems, survivors (with diffs), errors and stale equivalents."""
    for problem in ex.problems:
        ui.out.print(Text.assemble(("✗ ", "bold red"), (f"{ex.name}: ", "bold"), problem))
    for outcome in ex.survivors:
        m = outcome.mutant
        ui.out.print(Text.assemble(("✗ ", "bold red"), (f"{ex.name}: ", "bold"),
                                   f"mutant {m.number} ({m.operator}, line {m.line}) survived: {m.label}"))
        for line in m.diff.splitlines():
            ui.out.print(Text(f"    {line}", style="red" if line.startswith("-") else "green"), soft_wrap=True)
    for outcome in (o for o in ex.outcomes if o.status == "error"):
        m = outcome.mutant
        ui.out.print(Text.assemble(("! ", "bold magenta"), (f"{ex.name}: ", "bold"),
                                   f"mutant {m.number} ({m.operator}, line {m.line}) made the grader fail itself: "
                                   f"{outcome.reason}"))
    for entry in ex.stale:
        ui.out.print(Text.assemble(("· ", "yellow"), (f"{ex.name}: ", "bold"),
                                   "a recorded equivalent matches no mutant any more: "
                                   + " / ".join(entry.splitlines())))


def _summary(run: MutationReport) -> None:
    """One line: all explained, or how many survivors to close or explain."""
    survivors = sum(len(e.survivors) for e in run.exercises)
    total = sum(len(e.outcomes) for e in run.exercises)
    tail = f"(seed {run.seed}, at most {run.per_operator or 'all'} per operator, {run.duration_s:.0f} s)"
    if run.exit_code == 0:
        ui.line(f"Every one of {total} mutant(s) is caught or explained {tail}.", style="bold green")
        return
    ui.line(f"{survivors} of {total} mutant(s) survived {tail}: close the grader's gap, or record the mutant in "
            "exercise.toml as `[[mutants.equivalent]]` with the diff above and the reason no program can tell "
            "it from the solution.", style="bold")
