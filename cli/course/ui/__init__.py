"""All terminal output: one Console for data (stdout), one for status (stderr), and the primitives.

Learner and pytest text is never interpreted as markup: every piece of it goes through `Text`.
Text wraps at word boundaries to the terminal's width (80 columns when piped, or `COLUMNS`);
an indented block keeps its indent on every wrapped line. The views built from these live in
`course.ui.views` (learner) and `course.ui.instructor`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.text import Text

out = Console(highlight=False, emoji=False)
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
    """A line of data on stdout, never interpreted as markup, wrapped at word boundaries."""
    out.print(Text(text, style=style))


def block(text: str | Text, indent: int = 0, style: str = "") -> None:
    """Text on stdout, every line (wrapped ones too) indented by `indent` spaces."""
    body = text if isinstance(text, Text) else Text(text, style=style)
    pad = Text(" " * indent)
    _wrapped(body, pad, pad)


def labelled(label: Text, text: str, indent: int = 0) -> None:
    """`label` then `text`, the text's wrapped lines aligned under its first word."""
    first = Text.assemble(" " * indent, label, "  ")
    _wrapped(Text(text), first, Text(" " * first.cell_len))


def _wrapped(body: Text, first: Text, rest: Text) -> None:
    """Print `body` wrapped at word boundaries, after `first` on its first line and `rest` on the others.

    Lines are wrapped here rather than by padding, so no line carries trailing spaces.
    """
    if not body.plain.strip():
        return
    lines = body.wrap(out, max(out.width - rest.cell_len, 20))
    for i, part in enumerate(lines):
        part.rstrip()
        out.print(Text.assemble(first if i == 0 else rest, part), no_wrap=True, overflow="fold")
def emit_json(data: dict[str, Any]) -> None:
    """The one JSON object of a `--json` command, alone on stdout."""
    out.file.write(json.dumps(data, indent=2) + "\n")
    out.file.flush()


def raw(text: str) -> None:
    """Text written to stdout exactly as it is (a source file, for instance)."""
    out.file.write(text)
    out.file.flush()


def status_text(status: str) -> Text:
    """A coloured status word with its mark."""
    return Text(f"{MARKS.get(status, '?')} {LABELS.get(status, status)}", style=STYLES.get(status, ""))


def lesson(markdown: str) -> None:
    """Render a lesson written in Markdown, wrapped to the width."""
    from rich.markdown import Markdown  # imported here: markdown-it is slow to load and `list` never needs it

    # Links keep their address in the text: a learner reading a pipe or a plain terminal needs it.
    out.print(Markdown(markdown, hyperlinks=False))


@contextmanager
def progress_bar(total: int, label: str, enabled: bool = True) -> Iterator[Callable[[str], None]]:
    """A progress bar on stderr for long work, with the rate and time left; `advance(text)` moves it on."""
    if not enabled or total <= 1 or not err.is_terminal or os.environ.get("COURSE_NO_PROGRESS"):
        yield lambda _text="": None
        return
    from rich import progress as bars  # imported here: only long work shows a bar

    columns = (
        bars.TextColumn("{task.description}"),
        bars.BarColumn(),
        bars.MofNCompleteColumn(),
        bars.TimeElapsedColumn(),
        bars.TextColumn("left"),
        bars.TimeRemainingColumn(),
    )
    with bars.Progress(*columns, console=err, transient=True) as progress:
        task = progress.add_task(label, total=total)
        yield lambda text="": progress.update(task, advance=1, description=f"{label} {text}".strip())
