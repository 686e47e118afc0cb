"""All terminal output: one Console for data (stdout) and one for status (stderr), and the renderers.

Learner and pytest text is never interpreted as markup: every piece of it goes through `Text`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

out = Console(highlight=False, emoji=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, emoji=False)

STYLES = {
    "passed": "bold green",
    "failed": "bold red",
    "timeout": "bold red",
    "error": "bold magenta",
    "stale": "yellow",
    "not_tried": "dim",
    "skipped": "yellow",
}
MARKS = {"passed": "✓", "failed": "✗", "timeout": "⧖", "error": "!", "skipped": "-", "stale": "~", "not_tried": "·"}
LABELS = {"not_tried": "not tried", "timeout": "timed out"}


def error(message: str) -> None:
    """One sentence on stderr saying what went wrong and what to do."""
    err.print(Text.assemble(("error: ", "bold red"), message))


def warning(message: str) -> None:
    """A warning on stderr."""
    err.print(Text.assemble(("warning: ", "bold yellow"), message))


def info(message: str) -> None:
    """A status line on stderr."""
    err.print(Text(message, style="dim"))


def line(text: str = "", style: str = "") -> None:
    """A line of data on stdout, never interpreted as markup."""
    out.print(Text(text, style=style))


def emit_json(data: dict[str, Any]) -> None:
    """The one JSON object of a `--json` command, alone on stdout."""
    out.file.write(json.dumps(data, indent=2) + "\n")
    out.file.flush()


def status_text(status: str) -> Text:
    """A coloured status word with its mark."""
    return Text(f"{MARKS.get(status, '?')} {LABELS.get(status, status)}", style=STYLES.get(status, ""))


def exercise_table(title: str, rows: Iterable[dict[str, Any]], current: str | None) -> Table:
    """The `course list` table: position, name, topic, status, points."""
    table = Table(title=title, title_style="bold", expand=False)
    for column, justify in (
        ("#", "right"),
        ("exercise", "left"),
        ("topic", "left"),
        ("status", "left"),
        ("points", "right"),
    ):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for row in rows:
        marker = "→ " if row["name"] == current else "  "
        points = f"{row['score']:g}/{row['max_score']:g}" if row["max_score"] else "-"
        table.add_row(
            str(row["position"]), Text(marker + row["name"]), Text(row["topic"]), status_text(row["status"]), points
        )
    return table


def bar(n_done: int, n_total: int, width: int = 30) -> Text:
    """A one-line progress bar: ███░░░ 1/3 passed."""
    filled = round(width * n_done / n_total) if n_total else 0
    return Text.assemble(("█" * filled, "green"), ("░" * (width - filled), "dim"), f" {n_done}/{n_total} passed")


def result_block(result: Any, file_hint: str) -> None:
    """Per-check lines for one graded exercise, with the reason for each failure."""
    head = Text.assemble((result.name, "bold"), "  ", status_text(result.status))
    if result.max_score:
        head.append(f"  {result.score:g}/{result.max_score:g} points", style="")
    head.append(f"  {result.duration_s:.1f} s", style="dim")
    out.print(head)
    failing = [c for c in result.checks if c.status not in ("passed", "skipped")]
    # One cause behind every failure (a syntax error, a timeout): say it once, not per check.
    shared = len(failing) > 1 and len({c.message for c in failing}) == 1
    said = ""
    for check in result.checks:
        out.print(Text.assemble("  ", status_text(check.status), "  ", check.title))
        if check in failing and check.message and not shared:
            out.print(Text(_indent(check.message if check.message != said else "(the same reason as above)", 6)))
            said = check.message
    if shared:
        out.print(Text(_indent(failing[0].message, 2)))
    elif result.status != "passed":
        out.print(Text(_indent(result.message, 2), style=STYLES.get(result.status, "")))
    if result.checks and result.status in ("failed", "timeout"):
        out.print(
            Text(
                f"  your file: {file_hint}   seed {result.seed} (`--seed {result.seed}` repeats these inputs)",
                style="dim",
            )
        )


def _indent(text: str, n: int) -> str:
    """Indent every line of `text` by `n` spaces."""
    pad = " " * n
    return "\n".join(pad + part for part in text.splitlines())


def lesson(markdown: str) -> None:
    """Render a lesson written in Markdown."""
    from rich.markdown import Markdown  # imported here: markdown-it is slow to load and `list` never needs it

    out.print(Markdown(markdown))


@contextmanager
def progress_bar(total: int, label: str, enabled: bool = True) -> Iterator[Any]:
    """A progress bar on stderr for long work; `advance(description)` moves it on."""
    if not enabled or total <= 1 or not err.is_terminal or os.environ.get("COURSE_NO_PROGRESS"):
        yield lambda _text="": None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=True) as progress:
        task = progress.add_task(label, total=total)
        yield lambda text="": progress.update(task, advance=1, description=f"{label} {text}".strip())
