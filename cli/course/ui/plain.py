"""What plain `course list` prints through instead of rich's Console, so that it never imports `rich.console`.

Importing `rich.console` is an eighth of what `course list` costs (35 M of 290 M instructions), and the list
needs little of it: `Text` printed at the terminal's width, in its colours. `Plain` does that with rich's own
`Text` and `Style`, and finds the terminal, its size and its colours as Console does (rich 15: `FORCE_COLOR`,
`TTY_COMPATIBLE`, `NO_COLOR`, `TERM`, `COLUMNS`, `LINES`), so it writes the same bytes;
`tests/ui/test_plain_console.py` holds it to Console's output. `fits()` says where it can stand in: a POSIX
system, outside IPython and IDLE; elsewhere the Console is used.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import IO, NamedTuple

from rich.color import ColorSystem
from rich.errors import StyleSyntaxError
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

_TERM_COLORS = {"kitty": ColorSystem.EIGHT_BIT, "256color": ColorSystem.EIGHT_BIT, "16color": ColorSystem.STANDARD}


def fits() -> bool:
    """Whether `Plain` writes what a Console would here."""
    if os.name != "posix" or "IPython" in sys.modules:  # Windows' consoles and notebooks are Console's to detect
        return False
    return not getattr(sys.stdin, "__module__", "").startswith("idlelib")


class Size(NamedTuple):
    """A terminal's size, as Console's `size` gives it."""

    width: int
    height: int


class Plain:
    """A Console that prints only `Text`, for `course list`: the same terminal, size, colours and bytes."""

    tab_size = 8

    def __init__(self, file: IO[str] | None = None, *, stderr: bool = False,
                 on_broken_pipe: Callable[[], None] | None = None) -> None:
        self._file, self.stderr, self.quiet = file, stderr, False
        self._on_broken_pipe = on_broken_pipe
        environ = os.environ
        columns, lines = environ.get("COLUMNS"), environ.get("LINES")
        self._width = int(columns) if columns is not None and columns.isdigit() else None
        self._height = int(lines) if lines is not None and lines.isdigit() else None
        self.no_color = environ.get("NO_COLOR", "") != ""
        self.color_system = self._color_system()

    @property
    def file(self) -> IO[str]:
        """Where the text goes: the given file, else stdout or stderr as they are now."""
        file = self._file or (sys.stderr if self.stderr else sys.stdout)
        return getattr(file, "rich_proxied_file", file)

    @property
    def is_terminal(self) -> bool:
        """Whether the output understands escape sequences (Console's `is_terminal`)."""
        compatible = os.environ.get("TTY_COMPATIBLE", "")
        if compatible in ("0", "1"):
            return compatible == "1"
        force = os.environ.get("FORCE_COLOR")
        if force is not None:
            return force != ""
        isatty = getattr(self.file, "isatty", None)
        try:
            return False if isatty is None else bool(isatty())
        except ValueError:
            return False

    @property
    def is_dumb_terminal(self) -> bool:
        """A terminal that says it shows no escape sequences (`TERM=dumb`)."""
        return self.is_terminal and os.environ.get("TERM", "").lower() in ("dumb", "unknown")

    def _color_system(self) -> ColorSystem | None:
        """The colours the terminal shows, from `COLORTERM` and `TERM` (Console's `_detect_color_system`)."""
        if not self.is_terminal or self.is_dumb_terminal:
            return None
        if os.environ.get("COLORTERM", "").strip().lower() in ("truecolor", "24bit"):
            return ColorSystem.TRUECOLOR
        colors = os.environ.get("TERM", "").strip().lower().rpartition("-")[2]
        return _TERM_COLORS.get(colors, ColorSystem.STANDARD)

    @property
    def size(self) -> Size:
        """The terminal's width and height: `COLUMNS` and `LINES`, else the first standard stream's, else 80x25."""
        if self._width is not None and self._height is not None:
            return Size(self._width, self._height)
        if self.is_dumb_terminal:
            return Size(80, 25)
        width = height = None
        for fd in (0, 1, 2):
            try:
                width, height = os.get_terminal_size(fd)
            except (AttributeError, ValueError, OSError):
                continue
            break
        return Size(self._width if self._width is not None else width or 80,
                    self._height if self._height is not None else height or 25)

    @property
    def width(self) -> int:
        """The terminal's width in cells."""
        return self.size.width

    def get_style(self, name: str | Style, *, default: str | Style | None = None) -> Style:
        """A style from its definition (the names `course list` uses mean the same in rich's theme)."""
        if isinstance(name, Style):
            return name
        try:
            return Style.parse(name)
        except StyleSyntaxError:
            if default is None:
                raise
            return self.get_style(default)

    def _segments(self, whole: Text, overflow: str, no_wrap: bool) -> list[Segment]:
        """`whole` as Console renders it: each line wrapped at the width (`Text.wrap`), then the lines joined.

        A line that fits is kept as it is, which is what wrapping it gives: the list's rows all fit, and
        wrapping each costs more than the rest of printing them."""
        width, lines = self.width, []
        for line in whole.split(allow_blank=True):
            if "\t" not in line.plain and len(line) <= width and line.cell_len <= width:
                lines.append(line)
            else:
                lines.extend(line.wrap(self, width, justify="default", overflow=overflow, no_wrap=no_wrap))  # type: ignore[arg-type]
        return list(Text("\n").join(lines).render(self, end=whole.end))  # type: ignore[arg-type]

    def print(self, *objects: Text, crop: bool = True, no_wrap: bool | None = None,
              overflow: str | None = None) -> None:
        """Print `objects` on one line, wrapped at the width unless `no_wrap`, as Console's `print` does."""
        if self.quiet:
            return
        if not objects:
            segments = [Segment.line()]
        else:
            if not all(isinstance(o, Text) for o in objects):
                raise TypeError("Plain prints only rich Text")
            segments = self._segments(Text(" ", end="\n").join(objects), overflow or "fold", bool(no_wrap))
            if crop:
                segments = [s for line in Segment.split_and_crop_lines(segments, self.width, pad=False) for s in line]
        if self.no_color and self.color_system:
            segments = list(Segment.remove_color(segments))
        text = "".join(s.style.render(s.text, color_system=self.color_system) if s.style else s.text
                       for s in segments)
        try:
            self.file.write(text)
            self.file.flush()
        except BrokenPipeError:
            self.quiet = True
            if self._on_broken_pipe is not None:
                self._on_broken_pipe()
