"""Lessons in the terminal: prose wrapped to the width, fenced code printed as code, the task on its own.

Code is what a learner copies, so it is never wrapped or indented: each line is printed as the
lesson has it (highlighted on a terminal, verbatim when piped) and a line wider than the
terminal is left for the terminal to fold, which copies back as one line. Prose goes through
rich's Markdown renderer, which wraps at words.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass

from rich.text import Text

from course import ui

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`\s]*)[^`]*$")
HEADING = re.compile(r"^(?P<level>#{1,6})\s+(?P<title>.*?)\s*#*\s*$")
TASK_HEADING = re.compile(r"^(?P<level>#{1,6})\s+(?:the|your)\s+task\b", re.IGNORECASE | re.MULTILINE)
"""A lesson's task heading, however its lesson words it ("The task", "Your task"): shown as "Your task" in every one."""


@dataclass(frozen=True)
class Piece:
    """A run of prose, or one fenced code block with its language."""

    text: str
    code: bool = False
    language: str = ""


def pieces(markdown: str) -> list[Piece]:
    """Split a lesson into prose and fenced code blocks, in order (an unclosed fence runs to the end)."""
    found: list[Piece] = []
    prose: list[str] = []
    lines = markdown.splitlines()
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None:
            prose.append(lines[i])
            i += 1
            continue
        marker, indent = opening.group("fence"), len(opening.group("indent"))
        body, i = [], i + 1
        while i < len(lines) and not _closes(lines[i], marker):
            body.append(lines[i])
            i += 1
        i += 1  # the closing fence
        if prose:
            found.append(Piece("\n".join(prose)))
            prose = []
        code = "\n".join(line[indent:] if line[:indent].strip() == "" else line for line in body)
        found.append(Piece(textwrap.dedent(code), code=True, language=opening.group("info")))
    if prose:
        found.append(Piece("\n".join(prose)))
    return found


def _closes(line: str, marker: str) -> bool:
    """True when `line` closes a block opened by `marker` (the same character, at least as many)."""
    stripped = line.strip()
    return len(stripped) >= len(marker) and set(stripped) == {marker[0]}


def task(markdown: str) -> str | None:
    """The lesson's task: the section under its last heading that names a task, up to the next heading
    of that level or higher; None when there is no such heading."""
    lines = markdown.splitlines()
    fenced, start, level = False, None, 0
    for i, text in enumerate(lines):
        if FENCE.match(text):
            fenced = not fenced
        heading = None if fenced else HEADING.match(text)
        if heading and "task" in heading.group("title").lower():
            start, level = i, len(heading.group("level"))
    if start is None:
        return None
    end, fenced = len(lines), False
    for i in range(start + 1, len(lines)):
        if FENCE.match(lines[i]):
            fenced = not fenced
        heading = None if fenced else HEADING.match(lines[i])
        if heading and len(heading.group("level")) <= level:
            end = i
            break
    return "\n".join(lines[start:end]).strip() + "\n"


def render(markdown: str) -> None:
    """Print a lesson: prose wrapped to the width, code verbatim."""
    from rich.markdown import Markdown  # imported here: markdown-it is slow to load

    for piece in pieces(markdown):
        if piece.code:
            _code(piece)
        elif piece.text.strip():
            # Links keep their address in the text: a learner reading a pipe or a plain terminal needs it.
            ui.out.print(Markdown(TASK_HEADING.sub(r"\g<level> Your task", piece.text), hyperlinks=False))


def _code(piece: Piece) -> None:
    """One code block, each line whole; highlighted only on a terminal."""
    text = Text(piece.text)
    if ui.out.is_terminal and piece.language:
        from rich.syntax import Syntax

        text = Syntax(piece.text, piece.language, theme="ansi_dark", background_color="default").highlight(piece.text)
        text.rstrip()
    ui.out.print()
    for part in text.split("\n", allow_blank=True):
        ui.out.print(part, no_wrap=True, overflow="ignore", crop=False, soft_wrap=True)
    ui.out.print()
