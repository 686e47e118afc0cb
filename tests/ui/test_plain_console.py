"""`course.ui.plain`, what plain `course list` prints through, writes what rich's Console writes: the same
terminal, size and colours found from the same settings, the same bytes for the same text, in a real
pseudo-terminal and through a pipe."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console
from rich.text import Text

from course import ui
from course.session import Session, init_workspace
from course.ui import plain, views
from terminal import Terminal

REPO = Path(__file__).resolve().parents[2]
SETTINGS = ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "NO_COLOR", "TERM", "COLORTERM", "COLUMNS", "LINES")
CASES = [
    (False, {}),
    (True, {"TERM": "xterm-256color"}),
    (True, {"TERM": "xterm", "COLUMNS": "40", "LINES": "12"}),
    (True, {"TERM": "dumb"}),
    (True, {"TERM": "xterm", "NO_COLOR": "1"}),
    (True, {"TERM": "xterm-kitty", "COLORTERM": "truecolor"}),
    (False, {"FORCE_COLOR": "1", "COLUMNS": "60"}),
    (True, {"FORCE_COLOR": ""}),
    (True, {"TTY_COMPATIBLE": "0"}),
    (False, {"TTY_COMPATIBLE": "1", "TERM": "screen-16color"}),
]


class _File(io.StringIO):
    """A stream that says whether it is a terminal."""

    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        """What it was told to say."""
        return self.tty


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh workspace of the real course: parts, long titles, every status at `not tried`."""
    target = tmp_path_factory.mktemp("plain") / "ws"
    init_workspace(REPO, target)
    return target


def _drawn(console: object, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The list screen, then text that wraps, styles across lines, and a blank line, printed as the list prints."""
    monkeypatch.setattr(ui, "out", console)
    monkeypatch.setattr(ui, "err", console)
    views.course_list(Session.open(REPO, workspace), with_next=True)
    long = Text.assemble(("a title long enough to wrap at a word " * 4, "bold"),
                         ("then green\tand a tab\nand on", "green"))
    console.print(long, crop=False)  # type: ignore[attr-defined]
    console.print(long)  # type: ignore[attr-defined]
    console.print()  # type: ignore[attr-defined]
    ui.line("a line of words " * 12, style="dim")
    ui.warning("a warning, as `course list` gives one under its table")


@pytest.mark.parametrize(("tty", "settings"), CASES)
def test_plain_writes_what_a_console_writes(workspace: Path, monkeypatch: pytest.MonkeyPatch, tty: bool,
                                            settings: dict[str, str]) -> None:
    """For each terminal setting: the same terminal, size and colours as a Console, and the same bytes."""
    for name in SETTINGS:
        monkeypatch.delenv(name, raising=False)
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    theirs, ours = _File(tty), _File(tty)
    console = Console(file=theirs, highlight=False, emoji=False)
    stand_in = plain.Plain(ours)
    assert (stand_in.is_terminal, stand_in.size, stand_in.width, stand_in.color_system, stand_in.no_color) == \
        (console.is_terminal, tuple(console.size), console.width, console._color_system, console.no_color)
    _drawn(console, workspace, monkeypatch)
    _drawn(stand_in, workspace, monkeypatch)
    assert ours.getvalue() == theirs.getvalue()
    assert ("\x1b[" in ours.getvalue()) == (console.color_system is not None)


def test_plain_prints_only_text() -> None:
    """Anything but Text (markup in a string) is refused rather than printed differently."""
    with pytest.raises(TypeError):
        plain.Plain(io.StringIO()).print("[bold]x[/bold]")  # type: ignore[arg-type]


@pytest.mark.parametrize(("cols", "rows"), [(80, 30), (60, 30), (120, 60)])
def test_plain_course_list_is_the_typer_commands_on_a_terminal(workspace: Path, cols: int, rows: int) -> None:
    """Plain `course list` (through `Plain`) shows, escape codes and all, what `course list --workspace W`
    (through rich's Console) shows, in a real pseudo-terminal."""
    shown = []
    for args in (["list"], ["list", "--workspace", str(workspace)]):
        term = Terminal(args, cwd=workspace, cols=cols, rows=rows)
        try:
            term.expect("points")
            assert term.proc.wait(timeout=60) == 0
        finally:
            term.close()
        shown.append(term.raw)
    assert "\x1b[" in shown[0] and shown[0] == shown[1]


def test_plain_course_list_is_the_typer_commands_through_a_pipe(workspace: Path) -> None:
    """The same through a pipe: no escape codes, no trailing spaces, the same lines."""
    done = [subprocess.run([sys.executable, "-m", "course", *args], cwd=workspace, capture_output=True, text=True,
                           timeout=60, check=True).stdout
            for args in (["list"], ["list", "--workspace", str(workspace)])]
    assert "\x1b[" not in done[0] and done[0] == done[1]
    assert not any(line != line.rstrip() for line in done[0].splitlines())
