"""Lessons render wrapped to the width: every word kept, no line cropped or longer than the width."""

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

REPO = Path(__file__).resolve().parents[2]
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def _words(text: str) -> set[str]:
    """The words of a text: runs of letters, digits and underscores (a code fence's language is no word)."""
    return set(re.findall(r"[A-Za-z0-9_]+", re.sub(r"(?m)^(\s*)```\S*", r"\1", text)))


def _lessons() -> list[Path]:
    """The lesson of every exercise of the course."""
    return [e.lesson_path for e in load_course(REPO).exercises if e.lesson_path.is_file()]


@pytest.mark.parametrize("width", [60, 100, 160])
def test_every_word_of_every_lesson_appears(width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """At widths 60, 100 and 160, each lesson's words all appear and no line exceeds the width."""
    for lesson in _lessons():
        buffer = io.StringIO()
        monkeypatch.setattr(ui, "out", Console(file=buffer, width=width, color_system=None))
        ui.lesson(lesson.read_text(encoding="utf-8"))
        text = buffer.getvalue()
        too_long = [line for line in text.splitlines() if len(line) > width]
        assert not too_long, (lesson, too_long[:3])
        missing = _words(lesson.read_text(encoding="utf-8")) - _words(text)
        assert not missing, (lesson, sorted(missing)[:20])


def test_show_piped_keeps_every_word() -> None:
    """`course show NAME | cat`: the real command, piped, wraps at 80 columns and loses no word."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    done = subprocess.run(
        [sys.executable, "-m", "course", "show", "update_with_donate", "--course", str(REPO)],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=60, check=True,
    )
    lesson = load_course(REPO).get("update_with_donate").lesson_path.read_text(encoding="utf-8")
    assert max(len(line) for line in done.stdout.splitlines()) <= 80
    assert not _words(lesson) - _words(done.stdout)


def test_show_in_an_80_column_terminal_keeps_every_word() -> None:
    """`course show` in a real 80-column pseudo-terminal: no line longer than 80, every word there."""
    main, sub = pty.openpty()
    fcntl.ioctl(sub, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 80, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "course", "show", "update_with_donate", "--course", str(REPO)],
        stdin=sub, stdout=sub, stderr=sub, env={**env, "TERM": "xterm"}, cwd=REPO,
    )
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
    text = ANSI.sub("", seen.decode("utf-8", "replace")).replace("\r", "")
    lesson = load_course(REPO).get("update_with_donate").lesson_path.read_text(encoding="utf-8")
    assert max(len(line) for line in text.splitlines()) <= 80
    assert not _words(lesson) - _words(text)
