"""Lessons that paste: prose wraps to the width, code comes out line for line as the lesson has it,
long lessons are paged on a terminal, and `--task` prints the task alone."""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest
from rich.console import Console

from course import ui
from course.registry import load_course
from course.ui import lessons

REPO = Path(__file__).resolve().parents[2]
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def _words(text: str) -> set[str]:
    """The words of a text: runs of letters, digits and underscores (a code fence's language is no word, and an
    HTML comment, a note for the lesson's authors such as where its table of chip figures begins, is no text)."""
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    return set(re.findall(r"[A-Za-z0-9_]+", re.sub(r"(?m)^(\s*)```\S*", r"\1", text)))


def _lessons() -> list[Path]:
    """The lesson of every exercise of the course."""
    return [e.lesson_path for e in load_course(REPO).exercises if e.lesson_path.is_file()]


def _code_lines(markdown: str) -> list[str]:
    """Every non-blank line of every fenced block, as a learner would paste it."""
    return [line for piece in lessons.pieces(markdown) if piece.code for line in piece.text.splitlines()
            if line.strip()]


def _check_rendering(markdown: str, text: str, width: int) -> None:
    """Code lines appear whole and exact; every other line fits the width; no word is lost."""
    out_lines = text.splitlines()
    code = _code_lines(markdown)
    missing = [line for line in code if line.rstrip() not in out_lines]
    assert not missing, missing[:3]
    too_long = [line for line in out_lines if len(line) > width and line not in code]
    assert not too_long, too_long[:3]
    assert not _words(markdown) - _words(text)


@pytest.mark.parametrize("width", [60, 100, 160])
def test_every_lesson_keeps_its_code_and_its_words(width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """At widths 60, 100 and 160, each lesson's code lines come out exactly as written (never
    wrapped, never indented), prose never exceeds the width, and every word appears."""
    for lesson in _lessons():
        buffer = io.StringIO()
        monkeypatch.setattr(ui, "out", Console(file=buffer, width=width, color_system=None))
        markdown = lesson.read_text(encoding="utf-8")
        lessons.render(markdown)
        _check_rendering(markdown, buffer.getvalue(), width)


def test_every_code_line_fits_80_columns() -> None:
    """An 80-column terminal wraps a longer line mid-word, and a line broken there no longer pastes: each
    lesson's code is written to fit (a comment above its line rather than beside it)."""
    long = [(lesson.parent.name, line) for lesson in _lessons()
            for line in _code_lines(lesson.read_text(encoding="utf-8")) if len(line) > 80]
    assert not long, long


def test_a_task_never_points_at_what_only_the_lesson_shows() -> None:
    """`course show N --task` prints the task alone: it must not send the learner to "the table" (or the
    figure, or the code above) that only the whole lesson shows."""
    pointing = re.compile(r"\b(the|this) (table|figure|diagram)\b|\b(table|rules|code|figure) (above|below)\b",
                          re.IGNORECASE)
    found = []
    for lesson in _lessons():
        text = lessons.task(lesson.read_text(encoding="utf-8")) or ""
        has_table = any(line.lstrip().startswith("|") for line in text.splitlines())
        found += [(lesson.parent.name, m.group(0)) for m in pointing.finditer(text) if not has_table]
    assert not found, found


def _plain_env() -> dict[str, str]:
    """The environment without a width or a pager of the caller's."""
    return {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "PAGER")}


def test_show_piped_is_verbatim_code_and_no_padding() -> None:
    """`course show shard_and_reduce | cat`: code lines as the lesson has them, prose at 80 columns, no line
    ending in a space."""
    done = subprocess.run(
        [sys.executable, "-m", "course", "show", "shard_and_reduce", "--course", str(REPO)],
        capture_output=True, text=True, env=_plain_env(), cwd=REPO, timeout=60, check=True,
    )
    markdown = load_course(REPO).get("shard_and_reduce").lesson_path.read_text(encoding="utf-8")
    _check_rendering(markdown, done.stdout, 80)
    assert all(line == line.rstrip() for line in done.stdout.splitlines())
    assert "\x1b" not in done.stdout


def _terminal(argv: list[str], env: dict[str, str], rows: int = 50) -> str:
    """Run `argv` in an 80-column pseudo-terminal; what it showed, escape codes removed."""
    main, sub = pty.openpty()
    fcntl.ioctl(sub, termios.TIOCSWINSZ, struct.pack("HHHH", rows, 80, 0, 0))
    proc = subprocess.Popen(argv, stdin=sub, stdout=sub, stderr=sub, env={**env, "TERM": "xterm"}, cwd=REPO)
    os.close(sub)
    seen = b""
    deadline = time.monotonic() + 60
    try:
        while proc.poll() is None or select.select([main], [], [], 0.1)[0]:
            assert time.monotonic() < deadline
            if select.select([main], [], [], 0.1)[0]:
                try:
                    seen += os.read(main, 65536)
                except OSError:  # the terminal closed with the process
                    break
    finally:
        os.close(main)
        proc.wait(timeout=10)
    return ANSI.sub("", seen.decode("utf-8", "replace")).replace("\r", "")


def test_show_in_an_80_column_terminal_highlights_but_keeps_code_whole() -> None:
    """In a real terminal (`--no-pager`), code is coloured yet each line, once the colours are
    removed, is the lesson's line; prose fits 80 columns."""
    argv = [sys.executable, "-m", "course", "show", "shard_and_reduce", "--no-pager", "--course", str(REPO)]
    text = _terminal(argv, _plain_env())
    markdown = load_course(REPO).get("shard_and_reduce").lesson_path.read_text(encoding="utf-8")
    _check_rendering(markdown, text, 80)


def test_a_long_lesson_goes_through_the_pager(tmp_path: Path) -> None:
    """On a terminal shorter than the lesson, `course show` hands it to $PAGER; `--no-pager` does not."""
    caught = tmp_path / "paged.txt"
    pager = tmp_path / "pager.sh"
    pager.write_text(f"#!/bin/sh\ncat > {caught}\n")
    pager.chmod(0o755)
    env = {**_plain_env(), "PAGER": str(pager)}
    argv = [sys.executable, "-m", "course", "show", "update_with_donate", "--course", str(REPO)]
    shown = _terminal(argv, env, rows=30)
    assert "Edit: exercises/01_update_with_donate/update_with_donate.py" in caught.read_text()
    assert "Edit:" not in shown
    caught.unlink()
    shown = _terminal([*argv, "--no-pager"], env, rows=30)
    assert not caught.exists() and "Edit: exercises/01_update_with_donate/update_with_donate.py" in shown


def test_task_only() -> None:
    """`course show NAME --task` prints the task section and the file to edit, nothing before it."""
    done = subprocess.run(
        [sys.executable, "-m", "course", "show", "update_with_donate", "--task", "--course", str(REPO)],
        capture_output=True, text=True, env=_plain_env(), cwd=REPO, timeout=60, check=True,
    )
    assert done.stdout.lstrip().startswith("Your task")
    assert "Donation is permission" not in done.stdout and "update_with_donate(state, delta)" in done.stdout
    assert done.stdout.rstrip().endswith("Edit: exercises/01_update_with_donate/update_with_donate.py")


def test_every_task_is_headed_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lessons head their task "The task" or "Your task"; the learner reads "Your task" in every one, alone
    (`--task`, watch's `t`) or in the whole lesson."""
    for lesson in _lessons():
        text = lesson.read_text(encoding="utf-8")
        for shown in (lessons.task(text) or "", text):
            buffer = io.StringIO()
            monkeypatch.setattr(ui, "out", Console(file=buffer, width=80, color_system=None))
            lessons.render(shown)
            lines = [line.strip() for line in buffer.getvalue().splitlines()]
            assert "Your task" in lines and "The task" not in lines, lesson
            if shown is not text:
                assert next(line for line in lines if line) == "Your task", lesson


def test_pieces_keep_indented_fences_and_survive_an_unclosed_one() -> None:
    """A fence inside a list item is dedented to its own indent; a fence never closed runs to the end."""
    markdown = "Intro.\n\n- item\n\n  ```python\n  x = 1\n      y = 2\n  ```\n\nAfter.\n\n```\nopen\n"
    found = lessons.pieces(markdown)
    assert [p.code for p in found] == [False, True, False, True]
    assert found[1].text == "x = 1\n    y = 2" and found[1].language == "python"
    assert found[3].text == "open"


def test_task_is_the_last_task_heading_up_to_the_next_of_its_level() -> None:
    """The task section ends at the next heading of its level; a `#` inside code is no heading."""
    markdown = "# T\n\n## Idea\n\ntext\n\n## The task\n\ndo it\n\n```\n# not a heading\n```\n\n### Detail\n\nmore\n"
    assert lessons.task(markdown + "## Next\n\nlater\n") == (
        "## The task\n\ndo it\n\n```\n# not a heading\n```\n\n### Detail\n\nmore\n")
    assert lessons.task("# Only a title\n") is None
