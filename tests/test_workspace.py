"""Finding the course and the workspace in the order SPEC §4 gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from course import workspace
from course.errors import UsageError
from course.registry import load_course


def test_explicit_course_wins(mini_course: Path, tmp_path: Path) -> None:
    """--course is used first; the workspace defaults to the course root."""
    ctx = workspace.resolve(mini_course, None, cwd=tmp_path)
    assert ctx.course.root == mini_course.resolve() and ctx.workspace == mini_course.resolve()


def test_nearest_course_upward(mini_course: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Inside the course, the nearest course.toml upward is found."""
    monkeypatch.delenv("COURSE_ROOT", raising=False)
    monkeypatch.delenv("COURSE_WORKSPACE", raising=False)
    ctx = workspace.resolve(None, None, cwd=mini_course / "exercises" / "01_ex_pass")
    assert ctx.course.root == mini_course.resolve()


def test_init_records_course_and_marks_workspace(
    mini_course: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A workspace made by init is found from inside it, with the course it recorded."""
    monkeypatch.delenv("COURSE_ROOT", raising=False)
    monkeypatch.delenv("COURSE_WORKSPACE", raising=False)
    ws = tmp_path / "ws"
    workspace.init(load_course(mini_course), ws)
    ctx = workspace.resolve(None, None, cwd=ws / "exercises")
    assert ctx.workspace == ws.resolve() and ctx.course.root == mini_course.resolve()


def test_environment_variables(mini_course: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """COURSE_ROOT and COURSE_WORKSPACE stand in for --course and --workspace."""
    ws = tmp_path / "elsewhere"
    ws.mkdir()
    monkeypatch.setenv("COURSE_ROOT", str(mini_course))
    monkeypatch.setenv("COURSE_WORKSPACE", str(ws))
    ctx = workspace.resolve(None, None, cwd=tmp_path)
    assert ctx.course.root == mini_course.resolve() and ctx.workspace == ws.resolve()


def test_missing_workspace_is_usage_error(mini_course: Path, tmp_path: Path) -> None:
    """A workspace folder that does not exist is one sentence pointing at `course init`."""
    with pytest.raises(UsageError, match="course init"):
        workspace.resolve(mini_course, tmp_path / "nope", cwd=tmp_path)


def test_init_never_overwrites(mini_course: Path, tmp_path: Path) -> None:
    """Running init twice keeps the learner's edits."""
    course = load_course(mini_course)
    ws = tmp_path / "ws"
    workspace.init(course, ws)
    mine = ws / "exercises/02_ex_fail/ex_fail.py"
    mine.write_text("# edited\n")
    assert workspace.init(course, ws) == []
    assert mine.read_text() == "# edited\n"
