"""What learners see: the exercise list, verdicts check by check, progress, hints and watch's screen."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text

from course import ui

if TYPE_CHECKING:
    from course.engine.verdict import CheckEvent, ExerciseResult
    from course.hints import Hint
    from course.session import ExerciseRow, Session, Summary

KEYS = "keys: n next (once it passes) · h hint · l list · r reset · q quit"
ALL_PASS = "Every exercise passes."


def exercise_table(title: str, rows: list[ExerciseRow], current: str | None) -> Table:
    """The `course list` table: position, name, topic, status, points."""
    table = Table(title=title, title_style="bold", expand=False)
    for column, justify in (("#", "right"), ("exercise", "left"), ("topic", "left"), ("status", "left"),
                            ("points", "right")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for row in rows:
        marker = "→ " if row.name == current else "  "
        points = "-" if row.max_score is None else f"{row.score:g}/{row.max_score:g}"
        table.add_row(str(row.position), Text(marker + row.name), Text(row.topic), ui.status_text(row.status), points)
    return table


def bar(n_done: int, n_total: int, width: int = 30) -> Text:
    """A one-line progress bar: ███░░░ 1/3 passed."""
    filled = round(width * n_done / n_total) if n_total else 0
    return Text.assemble(("█" * filled, "green"), ("░" * (width - filled), "dim"), f" {n_done}/{n_total} passed")


def course_list(session: Session, *, with_next: bool) -> None:
    """The table of exercises and a progress bar; optionally what to do next."""
    summary = session.summary()
    now = session.current()
    ui.out.print(exercise_table(summary.course, summary.rows, now.name if now else None))
    ui.out.print(bar(summary.passed, len(summary.rows)))
    ui.line(f"Points: {summary.score:g} of {summary.max_score:g}.")
    if not with_next:
        return
    meta = session.course.meta
    if not session.progress.exercises and meta.welcome:
        ui.line(meta.welcome)
    if now is None:
        ui.line(meta.final or ALL_PASS, style="bold green")
    else:
        path = session.submission(now)
        ui.line(f"Next: edit {path}, then run `course check` (`course show {now.name}` for the lesson).")


def result_block(result: ExerciseResult, file_hint: str) -> None:
    """Per-check lines for one graded exercise, with the reason for each failure."""
    head = Text.assemble((result.name, "bold"), "  ", ui.status_text(result.status))
    if result.max_score:
        head.append(f"  {result.score:g}/{result.max_score:g} points")
    head.append(f"  {result.duration_s:.1f} s", style="dim")
    ui.out.print(head)
    failing = [c for c in result.checks if c.status not in ("passed", "skipped")]
    # One cause behind every failure (a syntax error, a timeout): say it once, not per check.
    shared = len(failing) > 1 and len({c.message for c in failing}) == 1
    said = ""
    for check in result.checks:
        ui.labelled(ui.status_text(check.status), check.title, indent=2)
        if check in failing and check.message and not shared:
            ui.block(check.message if check.message != said else "(the same reason as above)", indent=6)
            said = check.message
    if shared:
        ui.block(failing[0].message, indent=2)
    elif result.status != "passed":
        ui.block(result.message, indent=2, style=ui.STYLES.get(result.status, ""))
    if result.checks and result.status in ("failed", "timeout"):
        ui.block(f"your file: {file_hint}   seed {result.seed} (`--seed {result.seed}` repeats these inputs)",
              indent=2, style="dim")


def results(session: Session, graded: list[ExerciseResult]) -> None:
    """Every graded exercise, check by check, then the next step."""
    for result in graded:
        result_block(result, str(session.submission(session.exercise(result.name))))
        ui.line()
    failing = [r for r in graded if not r.passed]
    if failing and failing[0].status == "error":
        ui.line("Something is wrong with the course itself, not your code; tell your instructor.", style="bold")
    elif failing:
        first = failing[0].name
        ui.line(f"Next: fix {session.submission(session.exercise(first))}, then `course check {first}`. "
             f"Stuck? `course hint {first}`.", style="bold")
    elif (now := session.current()) is None:
        ui.line(session.course.meta.final or ALL_PASS, style="bold green")
    else:
        ui.line(f"Next: `course show {now.name}` for the next lesson, then `course check`.", style="bold")


def progress(summary: Summary) -> None:
    """A short summary of stored progress."""
    ui.out.print(bar(summary.passed, len(summary.rows)))
    ui.line(f"Points: {summary.score:g} of {summary.max_score:g}.")
    for row in summary.rows:
        when = row.last_checked or "never checked"
        ui.out.print(Text.assemble(ui.status_text(row.status), f" {row.name}  ({when})"))


def hint(shown: Hint) -> None:
    """One hint level, and how to get the next."""
    ui.line(f"Hint {shown.level} of {shown.levels} for {shown.exercise}:", style="bold")
    ui.line(shown.text)
    if not shown.last:
        ui.line(f"`course hint {shown.exercise}` again for the next level.", style="dim")


def check_json(session: Session, graded: list[ExerciseResult]) -> dict[str, Any]:
    """The `course check --json` object (SPEC §4)."""
    return {
        "course": session.course.meta.title,
        "jax_version": jax_version(),
        "passed": sum(r.passed for r in graded),
        "total": len(graded),
        "exercises": [r.to_json() for r in graded],
    }


def progress_json(summary: Summary) -> dict[str, Any]:
    """The stored progress as the `course progress --json` object (SPEC §4)."""
    return {
        "course": summary.course,
        "passed": summary.passed,
        "total": len(summary.rows),
        "score": summary.score,
        "max_score": summary.max_score,
        "exercises": [
            {"name": r.name, "status": r.status, "score": r.score, "max_score": r.max_score or 0.0,
             "last_checked": r.last_checked}
            for r in summary.rows
        ],
    }


def jax_version() -> str:
    """The installed JAX version, read without importing JAX."""
    from importlib import metadata  # slow to import; only `--json` needs it

    try:
        return metadata.version("jax")
    except metadata.PackageNotFoundError:
        return "unknown"


def watch_checking(name: str, position: int, total: int) -> None:
    """The moment a save is seen: which exercise is being checked."""
    ui.line(f"course watch · {name} ({position} of {total})", style="bold")
    ui.line(f"checking {name}...", style="dim")


def watch_event(event: CheckEvent) -> None:
    """One check's verdict as soon as the grading says it has ended."""
    ui.labelled(ui.status_text(event.status), event.title, indent=2)


def watch_screen(session: Session, result: ExerciseResult) -> None:
    """The full verdict of the watched exercise, and what to do next."""
    exercise = session.exercise(result.name)
    path = session.submission(exercise)
    ui.line(f"course watch · {exercise.name} ({exercise.position} of {len(session.course.exercises)})", style="bold")
    result_block(result, str(path))
    ui.line()
    if result.passed:
        ui.line(f"{exercise.name} passes. Press n for the next exercise.", style="bold green")
    else:
        ui.line(f"Edit {path} and save it to check again.", style="bold")
    ui.line(KEYS, style="dim")
