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

    from course.engine.parent.verdict import CheckEvent, ExerciseResult
    from course.registry import Exercise
    from course.session import Session

KEYS = "keys: n next (once it passes) · t task · h hint · l list · r reset · q quit"
NO_TERMINAL = (
    "`course watch` reads keys from a terminal and there is none here; run `course check` after each save "
    "instead (in a notebook, the `%%course NAME` cell magic grades a cell)."
)


def checking(name: str, position: int, total: int, *, again: bool = False) -> None:
    """The moment a save is seen: which exercise is being checked."""
    ui.line(f"course watch · {name} ({position} of {total})", style="bold")
    ui.line("saved again: checking the new version..." if again else f"checking {name}...", style="dim")


def task(session: Session, exercise: Exercise) -> None:
    """The task of the watched exercise, as `course show NAME --task` prints it."""
    from course.ui import lessons  # imported here: only the task renders Markdown

    text = exercise.lesson_path.read_text(encoding="utf-8")
    lessons.render(lessons.task(text) or text)
    ui.line(f"Edit: {ui.shown_path(session.submission(exercise))} (`course show {exercise.name}` has the lesson)",
            style="bold")


def event(check: CheckEvent) -> None:
    """One check's verdict as soon as the grading says it has ended (a check starting shows in the footer)."""
    if check.status != verdicts.RUNNING:
        ui.labelled(ui.status_text(check.status), check.title, indent=2)


FOOTER_LINES = 2
WIDEST_STATE = " · checking 999 s"
"""The widest state the footer shows: its layout leaves room for it, so the bar never changes width with the state."""
"""Lines of the terminal a screen leaves free: the progress line, and the one the cursor waits on."""


def screen(session: Session, result: ExerciseResult) -> None:
    """The verdict of the watched exercise, and what to do next: every check when it fits the terminal,
    else the first failing one, so that the title line never scrolls away."""
    height = ui.room()
    whole = ui.height_of(lambda: _screen(session, result, verbose=True)) if height is not None else 0
    _screen(session, result, verbose=height is None or whole <= height - FOOTER_LINES)


def _screen(session: Session, result: ExerciseResult, *, verbose: bool) -> None:
    """The watch screen, with every check (`verbose`) or the first failing one."""
    exercise = session.exercise(result.name)
    path = ui.shown_path(session.submission(exercise))
    ui.line(f"course watch · {exercise.name} ({exercise.position} of {len(session.course.exercises)})", style="bold")
    why = verdicts.not_started(session, result) if result.not_tried else ""
    verdicts.result_block(result, path, not_tried=why, verbose=verbose)
    ui.line()
    if result.passed:
        ui.line(f"{exercise.name} passes. Press n for the next exercise.", style="bold green")
    elif result.not_tried:
        ui.line(f"Press t for the task of {exercise.name}, then edit {path} and save it.", style="bold")
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

    def line(self, now: float | None = None, width: int = 200) -> Text:
        """The footer as text, in `width` columns: what matters least is left out first (the running
        check's name, the hint key, the bar's blocks), never the state or how to quit. The bar's width is
        chosen for the widest state, so that it keeps its width as the state changes."""
        summary = self.session.summary()
        state = Text()
        if self.state:
            state.append(f" · {self.state}", style="dim")
            if self.since is not None:
                state.append(f" {(time.monotonic() if now is None else now) - self.since:.0f} s", style="dim")
        running = (Text.assemble(" ·", verdicts.running_line(self.running, indent=1))
                   if self.state == "checking" and self.running is not None else Text())
        name = Text(f" · {self.name}") if self.name else Text()
        count = Text(f"{summary.passed}/{len(summary.rows)} passed")
        for bar_width, keys in ((20, " · h hint · q quit"), (10, " · h hint · q quit"), (10, " · q quit")):
            head = views.bar(summary.passed, len(summary.rows), width=bar_width)
            if Text.assemble(head, name, WIDEST_STATE, keys).cell_len <= width:
                break
        else:
            head, keys = count, " · q quit"
        for extra in (running, Text()):
            text = Text.assemble(head, name, state, extra, (keys, "dim"))
            if text.cell_len <= width:
                return text
        return Text.assemble(count, state, (" · q quit", "dim"))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        """One line that fits the width (cut only on a terminal too narrow for even its shortest form)."""
        text = self.line(width=options.max_width)
        text.no_wrap, text.overflow = True, "ellipsis"
        yield text
