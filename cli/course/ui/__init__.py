"""All terminal output: one Console for data (stdout), one for status (stderr), and the primitives.

The Consoles are made on first use; plain `course list` prints through `course.ui.plain` instead
(`use_plain`), which writes the same bytes without importing `rich.console`.

Learner and pytest text is never interpreted as markup: every piece of it goes through `Text`.
Text wraps at word boundaries to the terminal's width (80 columns when piped, or `COLUMNS`);
an indented block keeps its indent on every wrapped line, and a word longer than a line (a
path) is never split. Piped output carries no trailing spaces, and a reader that stops early
(`| head -1`) ends the output quietly: the command still exits with its own code. The views
built from these live in `course.ui.views` (learner), `course.ui.lessons`, `course.ui.verdicts`,
`course.ui.watching` and `course.ui.instructor`.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text

if TYPE_CHECKING:  # made on first use (`__getattr__`): plain `course list` prints through `course.ui.plain`
    from rich.console import Console


class _Stdout:
    """The process's stdout as it is now (tests swap it), trimming trailing spaces when it is no terminal."""

    def __init__(self) -> None:
        self._pending = ""

    @property
    def _target(self) -> Any:
        """The stream to write to: the real one, even while a live display proxies it."""
        return getattr(sys.stdout, "rich_proxied_file", sys.stdout)

    def isatty(self) -> bool:
        """Whether stdout is a terminal."""
        try:
            return bool(self._target.isatty())
        except (AttributeError, ValueError):
            return False

    @property
    def encoding(self) -> str:
        """The stream's encoding."""
        return getattr(self._target, "encoding", None) or "utf-8"

    def fileno(self) -> int:
        """The stream's descriptor."""
        return int(self._target.fileno())

    def write(self, text: str) -> int:
        """Write `text`; when piped, no line keeps the spaces rich pads it with."""
        if self.isatty():
            return int(self._target.write(text))
        lines = (self._pending + text).split("\n")
        last = lines.pop()
        kept = last.rstrip(" ")
        self._pending = last[len(kept):]  # written only if more text follows on that line
        self._target.write("".join(line.rstrip(" ") + "\n" for line in lines) + kept)
        return len(text)

    def write_exact(self, text: str) -> None:
        """Write `text` as it is (a source file, JSON)."""
        self._pending = ""
        self._target.write(text)

    def flush(self) -> None:
        """Flush the stream."""
        self._target.flush()


def _silence_stdout() -> None:
    """Point the stdout descriptor at /dev/null, so nothing written later fails at exit."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.__stdout__.fileno())  # type: ignore[union-attr]


STDOUT = _Stdout()
out: Console
"""The console for data (stdout), made on first use."""
err: Console
"""The console for status (stderr), made on first use."""


def __getattr__(name: str) -> Console:
    """`out` and `err` on first use: rich Consoles that treat a closed pipe as the end of output, not of the
    command."""
    if name not in ("out", "err"):
        raise AttributeError(f"module 'course.ui' has no attribute {name!r}")
    from rich.console import Console  # imported here: plain `course list` prints without it (`use_plain`)

    class _Console(Console):
        """A Console that treats a closed pipe as the end of output, not of the command."""

        def on_broken_pipe(self) -> None:
            """The reader left (`| head`): say nothing more, and let the command finish with its own exit code."""
            self.quiet = True
            _silence_stdout()

    if name == "out":
        made = _Console(file=STDOUT, highlight=False, emoji=False)  # type: ignore[arg-type]
    else:
        made = _Console(stderr=True, highlight=False, emoji=False)
    globals()[name] = made
    return made


def use_plain() -> None:
    """Print through `course.ui.plain` rather than rich's Console where it writes the same bytes (plain
    `course list`, whose start-up is mostly imports)."""
    from course.ui import plain

    if plain.fits() and "out" not in globals() and "err" not in globals():
        globals()["out"] = plain.Plain(STDOUT, on_broken_pipe=_silence_stdout)  # type: ignore[arg-type]
        globals()["err"] = plain.Plain(stderr=True, on_broken_pipe=_silence_stdout)


def _out() -> Console:
    """`out` as it is now (tests and `height_of` swap it), made if need be."""
    found = globals().get("out")
    return found if found is not None else __getattr__("out")


def _err() -> Console:
    """`err` as it is now, made if need be."""
    found = globals().get("err")
    return found if found is not None else __getattr__("err")

STYLES = {
    "passed": "bold green",
    "failed": "bold red",
    "timeout": "bold red",
    "error": "bold magenta",
    "stale": "yellow",
    "not_tried": "dim",
    "not_run": "dim",
    "not run": "dim",
    "skipped": "yellow",
}
MARKS = {"passed": "✓", "failed": "✗", "timeout": "⧖", "error": "!", "skipped": "-", "stale": "~", "not_tried": "·",
         "not_run": "○", "not run": "○"}
LABELS = {"not_tried": "not tried", "timeout": "timed out", "not_run": "not run"}


def error(message: str) -> None:
    """One sentence on stderr saying what went wrong and what to do."""
    _err().print(Text.assemble(("error: ", "bold red"), message))


def warning(message: str) -> None:
    """A warning on stderr."""
    _err().print(Text.assemble(("warning: ", "bold yellow"), message))


def info(message: str) -> None:
    """A status line on stderr."""
    _err().print(Text(message, style="dim"))


def line(text: str | Text = "", style: str = "") -> None:
    """A line of data on stdout, never interpreted as markup, wrapped at word boundaries."""
    body = text if isinstance(text, Text) else Text(text, style=style)
    if not body.plain:
        _out().print()
        return
    _wrapped(body, Text(), Text())


def block(text: str | Text, indent: int = 0, style: str = "") -> None:
    """Text on stdout, every line (wrapped ones too) indented by `indent` spaces."""
    body = text if isinstance(text, Text) else Text(text, style=style)
    pad = Text(" " * indent)
    _wrapped(body, pad, pad)


def labelled(label: Text, text: str | Text, indent: int = 0) -> None:
    """`label` then `text`, the text's wrapped lines aligned under its first word."""
    first = Text.assemble(" " * indent, label, "  ")
    _wrapped(text if isinstance(text, Text) else Text(text), first, Text(" " * first.cell_len))


def _wrapped(body: Text, first: Text, rest: Text) -> None:
    """Print `body` wrapped at word boundaries, after `first` on its first line and `rest` on the others.

    Lines are wrapped here rather than by padding, so no line carries trailing spaces; a word
    longer than the line is kept whole (the terminal folds it) rather than split.
    """
    if not body.plain.strip():
        return
    console = _out()
    width = max(console.width - rest.cell_len, 20)
    if "\n" not in body.plain and first.cell_len + body.cell_len <= console.width:  # most lines: nothing to wrap
        console.print(Text.assemble(first, body), no_wrap=True, overflow="ignore", crop=False)
        return
    lines = [piece for part in body.split("\n", allow_blank=True) for piece in part.divide(_breaks(part.plain, width))]
    for part in lines:
        part.rstrip()
    shown = Text("\n").join(Text.assemble(first if i == 0 else rest, part) for i, part in enumerate(lines))
    console.print(shown, no_wrap=True, overflow="ignore", crop=False)


def _breaks(text: str, width: int) -> list[int]:
    """Where to break `text` into lines of at most `width` cells, only between words: a word wider
    than a line gets a line of its own, whole."""
    from rich.cells import cell_len

    breaks, used = [], 0
    for word in re.finditer(r"\S+\s*", text):
        size = cell_len(word.group().rstrip())
        if used and used + size > width:
            breaks.append(word.start())
            used = 0
        used += cell_len(word.group())
    return breaks


def height_of(draw: Callable[[], None]) -> int:
    """How many lines `draw` prints to stdout at its width, found by drawing it aside (nothing is shown)."""
    import io

    from rich.console import Console

    global out
    shown = _out()
    out = Console(file=io.StringIO(), width=shown.width, color_system=None, highlight=False, emoji=False)
    try:
        draw()
        return out.file.getvalue().count("\n")  # type: ignore[attr-defined]
    finally:
        out = shown


def room() -> int | None:
    """The terminal's height in lines, or None when stdout is no terminal (a pipe has no height)."""
    console = _out()
    return console.size.height if console.is_terminal else None


def emit_json(data: dict[str, Any]) -> None:
    """The one JSON object of a `--json` command, alone on stdout."""
    raw(json.dumps(data, indent=2) + "\n")


def raw(text: str) -> None:
    """Text written to stdout exactly as it is (a source file, for instance)."""
    file = _out().file
    try:
        if file is STDOUT:
            STDOUT.write_exact(text)
        else:  # a console a test or a capture put in place
            file.write(text)
        file.flush()
    except BrokenPipeError:
        _silence_stdout()


def flush() -> None:
    """Write out everything both consoles hold."""
    for stream in (_out().file, _err().file, sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


def status_text(status: str) -> Text:
    """A coloured status word with its mark."""
    label = LABELS.get(status, status.replace("_", " "))
    return Text(f"{MARKS.get(status, '?')} {label}", style=STYLES.get(status, ""))


def shown_path(path: Path | str) -> str:
    """`path` relative to the current folder when that is shorter, else as it is."""
    text = str(path)
    with contextlib.suppress(ValueError, OSError):
        relative = os.path.relpath(text)
        if len(relative) < len(text):
            return relative
    return text


@contextmanager
def paged(enabled: bool = True) -> Iterator[None]:
    """Send what is printed inside to a pager when stdout is a terminal and it is taller than the screen."""
    console = _out()
    if not enabled or not console.is_terminal:
        yield
        return
    with console.capture() as captured:
        yield
    text = captured.get()
    if text.count("\n") < console.size.height - 1 or not _page(text):
        raw(text)


def _page(text: str) -> bool:
    """Show `text` in $PAGER (or `less -R`, which keeps colours); False when no pager could run."""
    import shlex
    import shutil
    import subprocess

    command = shlex.split(os.environ.get("PAGER", "")) or (["less"] if shutil.which("less") else [])
    if not command:
        return False
    # less shows colours only with -R; -F leaves at once when the text fits, -X keeps it on screen.
    env = {**os.environ, "LESS": os.environ.get("LESS", "-RFX")}
    try:
        subprocess.run(command, input=text.encode(STDOUT.encoding, "replace"), check=False, env=env)
    except (OSError, KeyboardInterrupt):
        return False
    return True


@contextmanager
def live(renderable: Any, *, transient: bool = True, enabled: bool = True,
         refresh_per_second: float = 10) -> Iterator[Callable[[], None]]:
    """Keep `renderable` drawn at the bottom of a terminal while the block runs (printing goes above it);
    yields a function that redraws it now. Nothing is drawn when stdout is no terminal."""
    console = _out()
    if not enabled or not console.is_terminal or os.environ.get("COURSE_NO_PROGRESS"):
        yield lambda: None
        return
    from rich.live import Live  # imported here: only a terminal shows live output

    with Live(renderable, console=console, transient=transient, refresh_per_second=refresh_per_second,
              redirect_stdout=False, redirect_stderr=False) as display:
        yield display.refresh


@contextmanager
def progress_bar(total: int, label: str, enabled: bool = True) -> Iterator[Callable[[str], None]]:
    """A progress bar on stderr for long work, with the rate and time left; `advance(text)` moves it on."""
    console = _err()
    if not enabled or total <= 1 or not console.is_terminal or os.environ.get("COURSE_NO_PROGRESS"):
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
    with bars.Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(label, total=total)
        yield lambda text="": progress.update(task, advance=1, description=f"{label} {text}".strip())
