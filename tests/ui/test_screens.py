"""Every learner's screen fits a terminal of 80x30, and one of 60 columns: nothing cut at the right, and
what matters (a table's header, the current exercise, a verdict's title, watch's progress line and its
way out) never scrolled away or left out."""

from __future__ import annotations

import io
import re
import time
import tomllib
from pathlib import Path

import pytest
from rich.console import Console

from course import ui
from course.engine.parent.verdict import CheckEvent, CheckResult, ExerciseResult
from course.paths import WorkspacePaths
from course.progress import Entry, ProgressStore, now_iso
from course.registry import load_course
from course.session import Session, init_workspace
from course.ui import views, watching
from course.watch import Watcher
from terminal import Terminal

REPO = Path(__file__).resolve().parents[2]
TOTAL = sum(e.max_score or 0 for e in load_course(REPO).exercises)
"""The course's points, as the progress line shows them."""
ROWS = 30
SIZES = [(80, ROWS), (60, ROWS)]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace of the real course whose first 12 exercises have passed: the current one is the 13th,
    deep in the table, in a part of its own."""
    target = tmp_path_factory.mktemp("screens") / "ws"
    init_workspace(REPO, target)
    session = Session.open(REPO, target)
    ProgressStore(WorkspacePaths(target)).record({
        e.name: Entry(status="passed", score=e.max_score or 0, max_score=e.max_score or 0, last_checked=now_iso(),
                      grader_hash=e.grader_hash)
        for e in session.course.exercises[:12]})
    return target


def _screen(monkeypatch: pytest.MonkeyPatch, width: int, height: int, where: Path | None = None) -> io.StringIO:
    """Send ui.out to a terminal of `width` x `height`, without colour, working in `where` (paths are shown
    from there, as from a learner's workspace); what it shows."""
    if where is not None:
        monkeypatch.chdir(where)
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, height=height, force_terminal=True, color_system=None,
                      highlight=False, emoji=False)
    monkeypatch.setattr(ui, "out", console)
    return buffer


def _fits(lines: list[str], width: int) -> None:
    """No line is wider than the terminal (a wider one would be cut or wrapped mid-word)."""
    wide = [line for line in lines if len(line.rstrip()) > width]
    assert not wide, wide


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_list_in_a_real_terminal_keeps_its_header_and_the_current_row(workspace: Path, width: int,
                                                                      height: int) -> None:
    """`course list` in a pseudo-terminal of 30 rows: the whole output fits in it (the prompt's line
    aside), so the title, the header, the current exercise's row and the bar are all on screen."""
    term = Terminal(["list", "--course", str(REPO), "--workspace", str(workspace)], cwd=workspace, cols=width,
                    rows=height)
    try:
        term.expect(f"of {TOTAL:g} points")
        assert term.proc.wait(timeout=60) == 0
    finally:
        term.close()
    lines = term.text().rstrip("\n").split("\n")
    assert len(lines) <= height - 1, lines
    _fits(lines, width)
    assert lines[0] == "JAX Performance & Distributed"
    assert any(line.split()[:2] == ["#", "exercise"] for line in lines)
    assert any(line.startswith("→ 13  tiled_matmul") for line in lines), lines
    assert "12/25 passed" in lines[-1]


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_folded_parts_are_one_line_each(tmp_path: Path, width: int, height: int) -> None:
    """`course` in a fresh workspace at 30 rows folds the parts after the first to a line each, its count then
    its title: a title too long for the width is cut there, never wrapped onto a line of its own."""
    target = tmp_path / "ws"
    init_workspace(REPO, target)
    term = Terminal(["--course", str(REPO), "--workspace", str(target)], cwd=target, cols=width, rows=height)
    try:
        term.expect(f"of {TOTAL:g} points")
        assert term.proc.wait(timeout=60) == 0
    finally:
        term.close()
    lines = term.text().rstrip("\n").split("\n")
    _fits(lines, width)
    titles = [p["title"] for p in tomllib.loads((REPO / "course.toml").read_text())["parts"]]
    folded = [line for line in lines if re.match(r"\d+/\d+ passed  Part \d", line)]
    assert len(folded) == len(titles) - 1, lines
    for line, title in zip(folded, titles[1:], strict=True):
        shown = line.split("passed  ", 1)[1]
        assert title == shown or (shown.endswith("…") and title.startswith(shown[:-1])), (shown, title)
    start = next(i for i, line in enumerate(lines) if line.split()[:2] == ["#", "exercise"])
    table = lines[start + 1:lines.index("", start)]
    assert all(line[:1] in " →" or line.startswith("Part ") or line in folded for line in table), table


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_watch_list_key_keeps_the_header_current_row_and_keys(workspace: Path, width: int, height: int,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Watch's `l`: the table, the keys under it and the progress line fit in the terminal."""
    shown = _screen(monkeypatch, width, height, workspace)
    watcher = Watcher(Session.open(REPO, workspace))
    watcher.on_key("l")
    lines = shown.getvalue().rstrip("\n").split("\n")
    assert len(lines) <= height - watching.FOOTER_LINES, lines
    _fits(lines, width)
    assert any(line.split()[:2] == ["#", "exercise"] for line in lines)
    assert any(line.startswith("→ 13  tiled_matmul") for line in lines)
    assert any(line.startswith("keys: n next") for line in lines[-2:]), lines[-2:]


def _long_verdict(name: str, n: int = 10) -> ExerciseResult:
    """A verdict of `n` failing checks, each with a reason of several lines."""
    reason = ("the kernel loads x_ref {} times where once is enough; keep the block in a local and reuse it, "
              "and look again at which index map walks K\nat tiled_matmul.py line 12: `acc += x_ref[...] @ y`")
    checks = [CheckResult(f"test_{i}", f"Check number {i} of the kernel's rules", "failed", 0.0, 1.0,
                          reason.format(i + 2)) for i in range(n)]
    return ExerciseResult(name=name, status="failed", max_score=float(n), checks=checks,
                          message=f"0 of {n} checks passed")


@pytest.mark.parametrize(("width", "height"), SIZES)
def test_a_long_verdict_in_watch_keeps_its_title(workspace: Path, width: int, height: int,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Ten failing checks do not fit 30 rows: watch shows the first failure under its title line and
    says how to see them all; the title is still the screen's first line."""
    shown = _screen(monkeypatch, width, height, workspace)
    session = Session.open(REPO, workspace)
    watching.screen(session, _long_verdict("tiled_matmul"))
    lines = shown.getvalue().rstrip("\n").split("\n")
    assert lines[0] == "course watch · tiled_matmul (13 of 25)"
    assert len(lines) <= height - watching.FOOTER_LINES, lines
    _fits(lines, width)
    said = " ".join(" ".join(lines).split())
    assert "9 more failing: `course check tiled_matmul` shows every check." in said


def test_a_short_verdict_in_watch_shows_every_check(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A verdict that fits is shown whole, every check under the title."""
    shown = _screen(monkeypatch, 80, ROWS)
    watching.screen(Session.open(REPO, workspace), _long_verdict("tiled_matmul", n=2))
    text = shown.getvalue()
    assert "Check number 0" in text and "Check number 1" in text and "more failing" not in text


@pytest.mark.parametrize("width", [80, 60])
def test_watch_progress_line_is_never_cut(workspace: Path, width: int) -> None:
    """The progress line, while a check runs with a long title: it fits the width, keeping the state, the
    time it has taken and the way out; what does not fit is left out, never cut mid-word."""
    footer = watching.Footer(Session.open(REPO, workspace), name="tiled_matmul", state="checking",
                             since=time.monotonic() - 3)
    footer.running = CheckEvent("tiled_matmul", "test_x", "The kernel's result matches x @ y for float32 and bfloat16",
                                "running", cpu_s=12, budget_s=30)
    line = footer.line(width=width).plain
    assert len(line) <= width, line
    assert "checking 3 s" in line and line.endswith("q quit") and "…" not in line
    roomy = footer.line(width=200).plain
    assert "12 s of 30 s CPU" in roomy and "h hint" in roomy


@pytest.mark.parametrize("width", [80, 60])
def test_watch_progress_bar_keeps_its_width_as_the_state_changes(workspace: Path, width: int) -> None:
    """Waiting, checking (a check running for a long while), passing, not yet: the bar at the line's start has
    one width throughout, so the line does not jump as watch works; the line always fits."""
    footer = watching.Footer(Session.open(REPO, workspace), name="sharded_donated_step")
    running = CheckEvent("sharded_donated_step", "test_x", "Donates the state", "running", cpu_s=4, budget_s=8)
    now = time.monotonic()
    widths = set()
    for state, since, check in (("", None, None), ("checking", now - 3, None), ("checking", now - 125, running),
                                ("passes", None, None), ("not yet", None, None)):
        footer.state, footer.since, footer.running = state, since, check
        line = footer.line(now=now, width=width).plain
        assert len(line) <= width and line.endswith("q quit"), line
        widths.add(len(line) - len(line.lstrip("█░")))
    assert len(widths) == 1, widths


@pytest.mark.parametrize("width", [80, 60])
def test_watch_task_key_fits(workspace: Path, width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """`t` in watch prints the watched exercise's task (after `n`, the new one's) and where to edit it."""
    shown = _screen(monkeypatch, width, ROWS, workspace)
    watcher = Watcher(Session.open(REPO, workspace))
    watcher.on_key("t")
    lines = shown.getvalue().rstrip("\n").split("\n")
    assert lines[0].startswith("Your task") or "task" in lines[0].lower(), lines[:3]
    assert "tiled_matmul.py" in " ".join(lines[-2:])


def test_warnings_come_after_a_long_table(workspace: Path, tmp_path: Path) -> None:
    """A damaged progress file's warning is printed under `course list`'s table, where it stays on screen."""
    import shutil

    copy = tmp_path / "ws"
    shutil.copytree(workspace, copy)
    (copy / ".course" / "progress.json").write_text("{ not json")
    shown = Terminal(["list", "--course", str(REPO), "--workspace", str(copy)], cwd=copy, cols=80, rows=ROWS)
    try:
        shown.expect(f"of {TOTAL:g} points")
        shown.expect("warning:")
        assert "damaged" in shown.text().split(f"of {TOTAL:g} points")[-1]
        assert shown.proc.wait(timeout=60) == 0
    finally:
        shown.close()


def test_list_rows_keep_their_order_and_mark_when_they_fit(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A terminal tall enough shows every row, with the topic column, as a pipe would."""
    shown = _screen(monkeypatch, 120, 60)
    views.course_list(Session.open(REPO, workspace), with_next=False)
    lines = shown.getvalue().split("\n")
    assert sum(line[:4].strip().lstrip("→").strip().isdigit() for line in lines) == 25
    assert any(line.split()[:3] == ["#", "exercise", "topic"] for line in lines)
