"""Finding the course and the workspace in the order SPEC §4 gives."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from course import workspace
from course.errors import UsageError
from course.paths import CACHE_ENV, WorkspacePaths
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


REPO = Path(__file__).resolve().parents[1]
COURSE_BIN = Path(sys.executable).with_name("course")


def _checked(workspace_dir: Path, env: dict[str, str]) -> dict:
    """`course check shard_and_reduce --json` of the reference solution in a fresh workspace of the real course."""
    made = subprocess.run([str(COURSE_BIN), "init", str(workspace_dir), "--course", str(REPO)], capture_output=True,
                          text=True, timeout=300, check=False, env=env)
    assert made.returncode == 0, made.stderr
    shutil.copyfile(REPO / "solutions" / "10_shard_and_reduce" / "shard_and_reduce.py",
                    workspace_dir / "exercises" / "10_shard_and_reduce" / "shard_and_reduce.py")
    done = subprocess.run([str(COURSE_BIN), "check", "shard_and_reduce", "--json", "-w", str(workspace_dir)],
                          capture_output=True, text=True, timeout=600, check=False, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)["exercises"][0]


def _entries(folder: Path) -> list[str]:
    """The compiled programs JAX keeps in a cache folder."""
    return sorted(p.name for p in folder.glob("*-cache")) if folder.is_dir() else []


def test_course_cache_names_one_folder_for_every_workspace(tmp_path: Path) -> None:
    """With `COURSE_CACHE`, two workspaces' gradings keep their compiled programs in the one folder it names and
    neither keeps a cache of its own; without it, a workspace keeps its own in `.course/xla-cache`."""
    shared = tmp_path / "shared"
    env = {**os.environ, CACHE_ENV: str(shared)}
    first, second = tmp_path / "one", tmp_path / "two"
    assert _checked(first, env)["status"] == "passed"
    kept = _entries(shared)
    assert kept, "a grading kept no compiled program in the shared folder"
    assert _checked(second, env)["status"] == "passed"
    assert set(kept) <= set(_entries(shared))
    for workspace_dir in (first, second):
        assert not _entries(WorkspacePaths(workspace_dir).state / "xla-cache"), workspace_dir
    own = tmp_path / "own"
    assert _checked(own, {k: v for k, v in os.environ.items() if k != CACHE_ENV})["status"] == "passed"
    assert _entries(WorkspacePaths(own).state / "xla-cache")


def test_course_cache_blank_is_unset(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A blank `COURSE_CACHE` is no setting; a relative one is taken from the folder the command runs in."""
    monkeypatch.setenv(CACHE_ENV, "  ")
    assert WorkspacePaths(tmp_path).cache == tmp_path / ".course" / "xla-cache"
    monkeypatch.setenv(CACHE_ENV, "programs")
    monkeypatch.chdir(tmp_path)
    assert WorkspacePaths(tmp_path / "ws").cache == tmp_path / "programs"
