"""Fitting `course inspect`'s verbatim text (jaxpr equations, the learner's lines, tables) to the terminal's width.

Prose wraps at spaces (`course.ui.block`); an equation or a line of code has long runs without a
space (`dimension_numbers=(([1],`), so it is broken after punctuation as well, never inside a
name or a number, and a piece too long for any line is elided with `…` rather than split.
"""

from __future__ import annotations

import re

from rich.text import Text

from course import ui

__all__ = ["MAX_LINES", "fit", "labelled_code", "table"]

MAX_LINES = 4
"""Lines one equation or one line of code may take before the rest is elided (`--json` has it whole)."""

_MARKS = re.compile(r"[^,(\[{=]*[,(\[{=]?")
"""A piece of a word that may end a line: up to and including a comma or an opening mark."""


def fit(text: str, width: int, *, hang: int = 4, max_lines: int = MAX_LINES) -> list[str]:
    """`text` as lines of at most `width` cells, broken at spaces (a word too long for a line after a comma
    or an opening mark); lines after the first indented by `hang`; past `max_lines`, elided with `…`."""
    width = max(width, hang + 12)
    if len(text) <= width:
        return [text]
    lines: list[str] = []
    current = text[:len(text) - len(text.lstrip())]  # a nested row's indent stays
    for word in re.findall(r"\S+\s*", text):
        room = width - (hang if lines else 0)
        if len(current + word.rstrip()) <= room:
            current += word
            continue
        if current.strip():
            lines.append(current.rstrip())
            current, room = "", width - hang
        for piece in (p for p in _MARKS.findall(word) if p):
            if current and len(current + piece.rstrip()) > room:
                lines.append(current.rstrip())
                current, room = "", width - hang
            if len(piece.rstrip()) > room:  # no mark to break at: the rest of the word is elided
                piece = piece[:room - 1] + "…"
            current += piece
    if current.strip():
        lines.append(current.rstrip())
    lines = [line if i == 0 else " " * hang + line for i, line in enumerate(lines)]
    if len(lines) > max_lines:
        last = lines[max_lines - 1]
        lines = [*lines[:max_lines - 1], (last[:width - 2] if len(last) > width - 2 else last) + " …"]
    return lines


def labelled_code(label: str, code: str, indent: int) -> None:
    """`line 12: code`, the code verbatim but folded after spaces or punctuation to the width, under itself."""
    first = " " * indent + label
    for i, piece in enumerate(fit(code, ui.out.width - len(first), hang=2)):
        head = Text(first, style="dim") if i == 0 else Text(" " * len(first))
        ui.out.print(Text.assemble(head, piece), soft_wrap=True)


def table(rows: list[list[str]], indent: int) -> list[Text] | None:
    """Columns aligned by hand (no row ends in padding), the first row dim as a header; None when
    the table is wider than the terminal."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    if indent + sum(widths) + 2 * (len(widths) - 1) > ui.out.width:
        return None
    out = []
    for k, row in enumerate(rows):
        text = "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        out.append(Text(" " * indent + text, style="dim" if k == 0 else ""))
    return out
