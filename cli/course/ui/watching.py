"""What `course watch` shows: "checking" the moment a save is seen, each check as it ends, the verdict,
and one line at the bottom that stays there: the course's progress bar and what watch is doing."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.text import Text

from course import ui
from course.ui import verdicts, views

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult

    from course.engine.verdict import CheckEvent, ExerciseResult
    from course.session import Session

KEYS = "keys: n next (once it passes) · h hint · l list · r reset · q quit"
NO_TERMINAL = (
    "`course watch` reads keys from a terminal and there is none here; run `course check` after each save "
    "instead (in a notebook, the `%%course NAME` cell magic grades a cell)."
)


def checking(name: str, position: int, total: int, *, again: bool = False) -> None:
    """The moment a save is seen: which exercise is being checked."""
    ui.line(f"course watch · {name} ({position} of {total})", style="bold")
    ui.line("saved again: checking the new version..." if again else f"checking {name}...", style="dim")


def event(check: CheckEvent) -> None:
    """One check's verdict as soon as the grading says it has ended (a check starting shows in the footer)."""
    if check.status != verdicts.RUNNING:
        ui.labelled(ui.status_text(check.status), check.title, indent=2)


def screen(session: Session, result: ExerciseResult) -> None:
    """The full verdict of the watched exercise, and what to do next."""
    exercise = session.exercise(result.name)
    path = ui.shown_path(session.submission(exercise))
    ui.line(f"course watch · {exercise.name} ({exercise.position} of {len(session.course.exercises)})", style="bold")
    why = verdicts.not_started(session, result) if result.not_tried else ""
    verdicts.result_block(result, path, not_tried=why)
    ui.line()
    if result.passed:
        ui.line(f"{exercise.name} passes. Press n for the next exercise.", style="bold green")
    else:
        ui.line(f"Edit {path} and save it to check again (h for a hint).", style="bold")
    ui.line(KEYS, style="dim")


@dataclass
class Footer:
    """The line kept at the bottom of the screen: progress bar, the exercise watched, and the state."""

    session: Session
    name: str | None = None
    state: str = ""
    since: float | None = None
    running: CheckEvent | None = None
    """The check running now, with the CPU time it has used, while checking."""

    def line(self, now: float | None = None) -> Text:
        """The footer as text."""
        summary = self.session.summary()
        text = Text.assemble(views.bar(summary.passed, len(summary.rows), width=20))
        if self.name:
            text.append(f" · {self.name}")
        if self.state:
            text.append(f" · {self.state}", style="dim")
            if self.since is not None:
                text.append(f" {(time.monotonic() if now is None else now) - self.since:.0f} s", style="dim")
            if self.state == "checking" and self.running is not None:
                text.append_text(Text.assemble(" ·", verdicts.running_line(self.running, indent=1)))
        text.append(" · h hint · q quit", style="dim")
        return text

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        """One line, cut to the width."""
        text = self.line()
        text.no_wrap, text.overflow = True, "ellipsis"
        yield text
