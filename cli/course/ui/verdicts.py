"""Verdicts as learners read them: check by check, live while grading, and a summary after several.

One exercise gets every check, each failure with its reason and what the learner's code printed
during it; several (`--all`) get the first failing check of each, then a summary table. An
untouched stub is one line. On a terminal, `LiveCheck` shows the exercise being graded and
each check's verdict as it ends, with a bar when there are several; it is erased before the
verdict is printed, so a terminal and a pipe end with the same text.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.text import Text

from course import ui
from course.ui import views

RUNNING = "running"
"""A check event's status while the check runs (`course.engine.wire.report.RUNNING`; the UI imports no engine)."""
CANCELLED = "cancelled"
"""A grading called off (Ctrl-C, a newer save): no verdict (`course.engine.parent.tree.CANCELLED`)."""
UNRECORDED = ("error", CANCELLED)
"""Results never recorded as progress (`course.session.UNRECORDED`)."""

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult

    from course.engine.parent.verdict import CheckEvent, CheckResult, ExerciseResult
    from course.registry import Exercise
    from course.session import Session

OUTPUT_LINES = 12
"""Lines of a check's output shown under it (the last ones); `--json` has all of it."""
QUIET = ("passed", "skipped", "not_run", "not run")
"""Check statuses that need no reason under them."""
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_CONTROL = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|[\x00-\x08\x0b-\x1f\x7f]")


def not_started(session: Session, result: ExerciseResult) -> str:
    """Why an exercise was not tried, in one line."""
    exercise = session.exercise(result.name)
    path = session.submission(exercise)
    if not path.is_file():
        return f"not tried: {ui.shown_path(path)} does not exist; `course reset {exercise.name}` restores the stub"
    try:
        stub = exercise.stub_path.read_text(encoding="utf-8")
    except OSError:
        stub = ""
    if "NotImplementedError" in stub:
        return "not started: the stub still raises NotImplementedError"
    return "not started: the file is still the stub"


def head(result: ExerciseResult) -> Text:
    """`name  ✗ failed  3/7 points  1.3 s`."""
    text = Text.assemble((result.name, "bold"), "  ", ui.status_text(result.status))
    if result.max_score:
        text.append(f"  {result.score:g}/{result.max_score:g} points")
    text.append(f"  {result.duration_s:.1f} s", style="dim")
    return text


def result_block(result: ExerciseResult, file_hint: str, *, verbose: bool = True, show_output: bool = False,
                 not_tried: str = "") -> None:
    """One graded exercise: every check (`verbose`) or only the first failing one, each failure's reason
    and the learner's output under it; an untried exercise is the single line `not_tried`."""
    if result.not_tried:
        ui.labelled(Text.assemble((result.name, "bold"), "  ", ui.status_text("not_tried")),
                    not_tried or result.message)
        return
    ui.out.print(head(result), no_wrap=True, crop=False)
    failing = [c for c in result.checks if c.status not in QUIET]
    # One cause behind every failure (a syntax error, a stopped run): say it once, not per check.
    shared = len(failing) > 1 and len({c.message for c in failing}) == 1
    shown = result.checks if verbose else failing[:1]
    if shared:  # the cause first, where it is read: the rows under it only say what it cost
        ui.block(failing[0].message, indent=2)
    said = ""
    for check in shown:
        ui.labelled(ui.status_text(check.status), check.title, indent=2)
        if check in failing and check.message and not shared:
            ui.block(check.message if check.message != said else "(the same reason as above)", indent=6)
            said = check.message
        if check in failing or show_output:
            learner_output(getattr(check, "output", ""), indent=6)
    if not verbose and len(failing) > 1:
        ui.block(f"{len(failing) - 1} more failing: `course check {result.name}` shows every check.", indent=2,
                 style="dim")
    elif result.status != "passed" and not shared and not _said(result.message, shown):
        ui.block(result.message, indent=2, style=ui.STYLES.get(result.status, ""))
    if verbose and result.checks and result.status in ("failed", "timeout") and not _one_cause(result):
        ui.block(f"your file: {file_hint} · seed {result.seed} (`--seed {result.seed}` repeats these inputs)",
                 indent=2, style="dim")


def _said(message: str, shown: list[CheckResult]) -> bool:
    """Whether `message` (a stopped run's reason, with the check it stopped in) is already said under a check
    shown: the reason is printed once, where it happened."""
    first = message.split(" (during ", 1)[0]
    return bool(first) and any(c.message.split("\n", 1)[0] == first for c in shown if c.status not in QUIET)


def _one_cause(result: ExerciseResult) -> bool:
    """Whether every check failed for one reason, none having run on its own (a file that does not compile, or
    whose import raised): no inputs were drawn, so the seed repeats nothing."""
    checks = result.checks
    return len(checks) > 1 and len({c.message for c in checks}) == 1 and all(c.status == "failed" for c in checks)


def learner_output(text: str, indent: int) -> None:
    """What the learner's code printed during a check: its last lines, each marked as theirs."""
    lines = _CONTROL.sub("", text.expandtabs(4)).rstrip().splitlines()
    if not lines:
        return
    kept = lines[-OUTPUT_LINES:]
    cut = len(lines) - len(kept)
    note = f" (the last {len(kept)} of {len(lines)} lines; `--json` has them all)" if cut else ""
    ui.block(f"your code printed{note}:", indent=indent, style="dim")
    for line in kept:
        ui.labelled(Text("│", style="dim"), line[:500], indent=indent)


def results(session: Session, graded: list[ExerciseResult], *, verbose: bool = False,
            show_output: bool = False, cell: bool = False, then: Callable[[], None] | None = None) -> None:
    """The verdict of a `course check`: in full for one exercise; for several, the first failure of
    each and a summary table; then whatever `then` adds (the chip's words), the points and the next step
    (after a `%%course` cell, with `cell`)."""
    several = len(graded) > 1
    for result in graded:
        exercise = session.exercise(result.name)
        why = not_started(session, result) if result.not_tried else ""
        result_block(result, ui.shown_path(session.submission(exercise)), verbose=verbose or not several,
                     show_output=show_output, not_tried=why)
        if not several or verbose or not result.passed:
            ui.line()
    if several:
        summary_table(session, graded)
        ui.line()
    if then is not None:
        then()
    views.next_step(session, graded, cell=cell)


def kept(finished: list[ExerciseResult], total: int, *, shown: bool = True) -> str:
    """What a `course check` stopped by Ctrl-C kept, in one sentence: the verdicts reached before it (`shown`
    above it), each recorded as it came, and how many exercises were left ungraded."""
    recorded = sum(r.status not in UNRECORDED for r in finished)
    if not recorded:
        return "no verdict had been reached, so nothing was recorded."
    if shown:
        said = "the verdict above is recorded" if recorded == 1 else f"the {recorded} verdicts above are recorded"
    else:
        said = "1 verdict is recorded" if recorded == 1 else f"{recorded} verdicts are recorded"
    left = total - len(finished)
    if not left:
        return f"{said}."
    rest = f"the other {left} exercises were not graded" if left > 1 else "the other exercise was not graded"
    return f"{said}; {rest} (run the same `course check` again for {'them' if left > 1 else 'it'})."


def summary_table(session: Session, graded: list[ExerciseResult]) -> None:
    """One aligned row per graded exercise: number, name, status, points."""
    header = [Text(h, style="dim") for h in ("   #", "exercise", "status", "points")]
    rows = [header]
    for result in graded:
        status = "not_tried" if result.not_tried else result.status
        known = result.max_score or session.exercise(result.name).max_score
        rows.append([Text(f"{session.exercise(result.name).position:>4}"), Text(result.name),
                     ui.status_text(status), Text(views.points(0.0 if result.not_tried else result.score, known))])
    for line in views.columns(rows, right={3}):
        ui.out.print(line, no_wrap=True, crop=False)


class LiveCheck:
    """The state of a `course check` in flight, drawn by rich on each refresh (for a terminal only).

    `event` and `result` are called from grading threads; drawing reads under the same lock.
    """

    def __init__(self, exercises: list[Exercise], course_size: int, jobs: int) -> None:
        self.exercises, self.course_size, self.jobs = exercises, course_size, max(jobs, 1)
        self.events: dict[str, list[CheckEvent]] = {}
        self.running: dict[str, CheckEvent] = {}
        self.done: dict[str, ExerciseResult] = {}
        self.started = time.monotonic()
        self._lock = threading.Lock()

    def event(self, event: CheckEvent) -> None:
        """A check has started, is running (with the CPU time it has used) or has ended."""
        with self._lock:
            if event.status == RUNNING:
                self.running[event.exercise] = event
            else:
                self.running.pop(event.exercise, None)
                self.events.setdefault(event.exercise, []).append(event)

    def result(self, result: ExerciseResult) -> None:
        """An exercise has its verdict."""
        with self._lock:
            self.done[result.name] = result

    def finished(self) -> list[ExerciseResult]:
        """The verdicts reached so far, in the order the exercises were given (a grading called off is none)."""
        with self._lock:
            return [self.done[e.name] for e in self.exercises
                    if e.name in self.done and self.done[e.name].status != CANCELLED]

    def lines(self, now: float | None = None) -> list[Text]:
        """What to draw now."""
        now = time.monotonic() if now is None else now
        spin = SPINNER[int(now * 10) % len(SPINNER)]
        elapsed = f"{now - self.started:.1f} s"
        with self._lock:
            running = [e for e in self.exercises if e.name not in self.done][: self.jobs]
            if len(self.exercises) == 1:
                one = self.exercises[0]
                top = Text.assemble((spin, "cyan"), f" checking {one.name} ({one.position} of {self.course_size})",
                                    (f" · {elapsed}", "dim"))
                now_running = [running_line(r) for r in [self.running.get(one.name)] if r is not None]
                return [top, *[_event_line(e) for e in self.events.get(one.name, [])], *now_running]
            done = len(self.done)
            top = Text.assemble((spin, "cyan"), f" grading {len(self.exercises)} exercises · ",
                                views.bar(done, len(self.exercises), width=20, word="done"), (f" · {elapsed}", "dim"))
            shown = [top]
            for exercise in running:
                marks = [Text(ui.MARKS.get(e.status, "?"), style=ui.STYLES.get(e.status, ""))
                         for e in self.events.get(exercise.name, [])]
                line = Text.assemble(f"  now {exercise.name} ", *marks)
                running = self.running.get(exercise.name)
                if running is not None:
                    line.append_text(Text.assemble(" ", running_line(running, indent=0)))
                shown.append(line)
            return shown

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        """Each line cut to the width (a live display must never wrap)."""
        for line in self.lines():
            line.no_wrap, line.overflow = True, "ellipsis"
            yield line


def running_line(event: CheckEvent, indent: int = 2) -> Text:
    """`  … title · 12 s of 20 s CPU`: the check running now and, once it shows, the share of its CPU
    limit it has used (a loop that never ends is seen coming)."""
    text = Text.assemble(" " * indent, ("…", "cyan"), " ", event.title)
    if event.budget_s and event.cpu_s >= 1:
        text.append(f" · {event.cpu_s:.0f} s of {event.budget_s:.0f} s CPU", style="dim")
    return text


def _event_line(event: CheckEvent) -> Text:
    """`  ✓ passed  title` for a check that has just ended."""
    return Text.assemble("  ", ui.status_text(event.status), "  ", event.title)
