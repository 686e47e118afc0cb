"""What learners see of their course: the exercise list, progress, hints, next steps and the JSON objects.

Verdicts are drawn by `course.ui.verdicts`, watch's screen by `course.ui.watching`. One points
rule holds everywhere: a row shows what its last grading earned, and every total is the sum
of the rows (`course.session.Summary`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from rich.text import Span, Text

from course import ui

if TYPE_CHECKING:
    from course.engine.parent.verdict import ExerciseResult
    from course.hints import Hint
    from course.session import ExerciseRow, Session, Summary

ALL_PASS = "Every exercise passes."


def columns(rows: list[list[Text]], right: frozenset[int] | set[int] = frozenset(), gap: int = 2) -> list[Text]:
    """Rows of cells aligned in columns (those in `right` flush right); no line ends in spaces.

    Each line is built as one string with style spans: assembling Text piece by piece costs more
    than everything else `course list` does.
    """
    widths = [max((row[i].cell_len for row in rows if i < len(row)), default=0) for i in range(max(map(len, rows)))]
    lines = []
    for row in rows:
        plain: list[str] = []
        spans: list[Span] = []
        at = 0
        for i, cell in enumerate(row):
            pad = " " * (widths[i] - cell.cell_len)
            last = i == len(row) - 1
            if i in right:
                plain.append(pad)
                at += len(pad)
            plain.append(cell.plain)
            if cell.style:
                spans.append(Span(at, at + len(cell.plain), cell.style))
            spans += [Span(at + sp.start, at + sp.end, sp.style) for sp in cell.spans]
            at += len(cell.plain)
            tail = "" if last else ("" if i in right else pad) + " " * gap
            plain.append(tail)
            at += len(tail)
        lines.append(Text("".join(plain), spans=spans))
    return lines


def points(score: float, max_score: float | None) -> str:
    """`3/7` (or `-` when the grader's points cannot be read)."""
    return "-" if max_score is None else f"{score:g}/{max_score:g}"


def row_cells(row: ExerciseRow, current: str | None, topic: bool = True) -> list[Text]:
    """One exercise's cells: marker and number, name, topic, status, points."""
    marker = "→" if row.name == current else " "
    cells = [Text(f"{marker}{row.position:>3}"), Text(row.name)]
    if topic:
        cells.append(Text(row.topic, style="dim"))
    return [*cells, ui.status_text(row.status), Text(points(row.score, row.max_score))]


def exercise_rows(session: Session, rows: list[ExerciseRow], current: str | None, topic: bool = True,
                  height: int | None = None, width: int | None = None) -> Text:
    """The exercises as aligned rows under a header, each part of the course under its heading.

    Given a `height` the rows must fit in (a terminal's), parts other than the current one shrink to
    a line each, then the rows around the current one are kept: the header and the current row
    never scroll away.
    """
    header = [Text("   #", style="dim"), Text("exercise", style="dim")]
    header += [Text("topic", style="dim")] if topic else []
    header += [Text("status", style="dim"), Text("points", style="dim")]
    cells = [header] + [row_cells(r, current, topic) for r in rows]
    lines = columns(cells, right={len(header) - 1})
    parts = _parts(session, rows, lines[1:])
    shown = [line for title, members in parts for line in ([title] if title else []) + [t for _, t in members]]
    if height is not None and 1 + tall(shown, width) > height:
        shown = _shrunk(parts, current, height - 1, width)
    return Text("\n").join([lines[0], *shown])


def tall(lines: list[Text], width: int | None) -> int:
    """How many lines of a terminal `width` wide `lines` take once a long one wraps."""
    return sum(max(1, -(-line.cell_len // width)) if width else 1 for line in lines)


def _parts(session: Session, rows: list[ExerciseRow],
           lines: list[Text]) -> list[tuple[Text | None, list[tuple[ExerciseRow, Text]]]]:
    """The rows grouped under their part's heading (None before the first part)."""
    titles = session.course.part_titles()
    parts: list[tuple[Text | None, list[tuple[ExerciseRow, Text]]]] = []
    for row, text in zip(rows, lines, strict=True):
        if row.name in titles or not parts:
            parts.append((Text(titles[row.name], style="bold") if row.name in titles else None, []))
        parts[-1][1].append((row, text))
    return parts


def _shrunk(parts: list[tuple[Text | None, list[tuple[ExerciseRow, Text]]]], current: str | None,
            height: int, width: int | None) -> list[Text]:
    """The parts in `height` lines: each part but the current one as its heading and a count; then, if
    that is still too tall, the rows nearest the current one."""
    shown: list[Text] = []
    for title, members in parts:
        here = any(row.name == current for row, _ in members)
        if here or title is None:
            shown += ([title] if title else []) + [text for _, text in members]
        else:
            done = sum(row.status == "passed" for row, _ in members)
            folded = Text.assemble((f"{done}/{len(members)} passed  ", "dim"), title)
            if width is not None:  # a folded part is one line: its title is cut to fit rather than wrapped
                folded.truncate(width, overflow="ellipsis")
            shown.append(folded)
    if tall(shown, width) <= height:
        return shown
    at = next((i for i, t in enumerate(shown) if t.plain.startswith("→")), 0)
    start = max(0, min(at - height // 2, len(shown) - height + 1))
    window = shown[start:start + height - 1]
    return [*window, Text(f"  … {len(shown) - len(window)} more: `course list | less` shows every row", style="dim")]


def bar(n_done: int, n_total: int, width: int = 30, word: str = "passed") -> Text:
    """A one-line progress bar: ███░░░ 1/3 passed."""
    filled = round(width * n_done / n_total) if n_total else 0
    return Text.assemble(("█" * filled, "green"), ("░" * (width - filled), "dim"), f" {n_done}/{n_total} {word}")


def standing(summary: Summary, width: int = 30) -> Text:
    """The bar with the points: ███░░░ 1/3 passed · 7 of 31 points."""
    return Text.assemble(bar(summary.passed, len(summary.rows), width),
                         f" · {summary.score:g} of {summary.max_score:g} points")


def course_list(session: Session, *, with_next: bool, reserve: int = 0) -> None:
    """The exercises by part, the progress bar with the points; optionally what to do next. `reserve`
    lines of the terminal stay free for what is shown under it (watch's keys and progress line)."""
    summary = session.summary()
    now = session.current()
    # On a terminal the header and the current row must stay on screen: the table gets what is left
    # of its height once the title, the bar, the next step and the prompt have their lines.
    height = ui.out.size.height - (5 + 2 * with_next + reserve) if ui.out.is_terminal else None
    width = ui.out.width
    current = now.name if now else None
    table = exercise_rows(session, summary.rows, current, height=height, width=width)
    if max(line.cell_len for line in table.split("\n")[:2]) > width:  # the topic is what a narrow terminal drops
        table = exercise_rows(session, summary.rows, current, topic=False, height=height, width=width)
    # One print for the whole table: each print of rich costs as much as rendering a few rows. A part's
    # title longer than the width wraps at a word; every row fits.
    ui.out.print(Text("\n").join([Text(summary.course, style="bold"), Text(), table, Text(),
                                  standing(summary, width=min(30, max(10, width - 40)))]), crop=False)
    if not with_next:
        return
    meta = session.course.meta
    if not session.progress.exercises and meta.welcome:
        ui.line(meta.welcome)
    if now is None:
        ui.line(meta.final or ALL_PASS, style="bold green")
    else:
        path = ui.shown_path(session.submission(now))
        ui.line(f"Next: edit {path}, then run `course check` (`course show` prints the lesson).")


def next_step(session: Session, graded: list[ExerciseResult], *, cell: bool = False) -> None:
    """After a check: the course's points (the sum of the rows), then the one thing to do next; after a
    `%%course NAME` cell (`cell`), in a notebook's terms: the cell is the file, and running it grades it."""
    ui.line(f"Points: {session.summary().score:g} of {session.summary().max_score:g} (`course list` has them all).",
            style="dim")
    failing = [r for r in graded if not r.passed]
    if failing and failing[0].status == "error":
        ui.line("Something is wrong with the course itself, not your code; tell your instructor.", style="bold")
        return
    if failing:
        first = failing[0].name
        path = ui.shown_path(session.submission(session.exercise(first)))
        verb = "edit" if failing[0].not_tried else "fix"
        if cell:
            ui.line(f"Next: {verb} the cell and run it again. Stuck? `%course hint {first}`.", style="bold")
        else:
            ui.line(f"Next: {verb} {path}, then `course check {first}`. Stuck? `course hint {first}`.", style="bold")
    elif (now := session.current()) is None:
        ui.line(session.course.meta.final or ALL_PASS, style="bold green")
    elif cell:
        ui.line(f"Next: `%course show {now.name}` for the next lesson, then a cell that starts with "
                f"`%%course {now.name}`.", style="bold")
    else:
        ui.line(f"Next: `course show {now.name}` for the next lesson, then `course check`.", style="bold")


def progress(summary: Summary, now: float | None = None) -> None:
    """The stored progress: the bar and points, then one aligned row per exercise with when it was checked."""
    ui.out.print(standing(summary), no_wrap=True, crop=False)
    ui.line()
    rows = [[ui.status_text(r.status), Text(r.name), Text(points(r.score, r.max_score)),
             Text(human_time(r.last_checked, now), style="dim")] for r in summary.rows]
    for text in columns(rows, right={2}):
        ui.out.print(text, no_wrap=True, crop=False)


def human_time(stamp: str | None, now: float | None = None) -> str:
    """A stored UTC time as a person reads it, in local time: `today 14:02`, `yesterday 09:13`,
    `Mon 14:02` within a week, `3 Dec 14:02` this year, `3 Dec 2025` before."""
    if not stamp:
        return "never checked"
    import calendar

    try:
        when = calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ"))
    except ValueError:
        return stamp
    local, today = time.localtime(when), time.localtime(now)
    days = (_day(today) - _day(local))
    clock = f"{local.tm_hour:02d}:{local.tm_min:02d}"
    if days == 0:
        return f"today {clock}"
    if days == 1:
        return f"yesterday {clock}"
    if 1 < days < 7:
        return f"{time.strftime('%a', local)} {clock}"
    if local.tm_year == today.tm_year:
        return f"{local.tm_mday} {time.strftime('%b', local)} {clock}"
    return f"{local.tm_mday} {time.strftime('%b', local)} {local.tm_year}"


def _day(moment: time.struct_time) -> int:
    """A day number for local dates, so that two dates can be subtracted."""
    import datetime

    return datetime.date(moment.tm_year, moment.tm_mon, moment.tm_mday).toordinal()


def hint(shown: Hint, *, in_watch: bool = False) -> None:
    """One hint level, and how to get the next (a key in watch mode, a command elsewhere)."""
    ui.line(f"Hint {shown.level} of {shown.levels} for {shown.exercise}:", style="bold")
    ui.line(shown.text)
    if shown.last:
        ui.line("That was the last hint.", style="dim")
    elif in_watch:
        ui.line("Press h for the next one.", style="dim")
    else:
        ui.line(f"`course hint {shown.exercise}` again for the next level.", style="dim")


def check_json(session: Session, graded: list[ExerciseResult],
               on_chip: dict[str, Any] | None = None) -> dict[str, Any]:
    """The `course check --json` object (SPEC §4), each check with what the learner's code printed, and (on a
    machine with a TPU) what the chip said of the exercise's kernels."""
    exercises = []
    for result in graded:
        data = result.to_json()
        for check, shown in zip(result.checks, data["checks"], strict=True):  # type: ignore[call-overload]
            shown.setdefault("output", getattr(check, "output", ""))
        if on_chip and result.name in on_chip:
            data["chip"] = on_chip[result.name]
        exercises.append(data)
    return {
        "course": session.course.meta.title,
        "jax_version": jax_version(),
        "passed": sum(r.passed for r in graded),
        "total": len(graded),
        "exercises": exercises,
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
