"""A learner's first hour: in a fresh clone, a fresh `course init` and a fresh release, every one of the
course's untouched stubs is "not tried" through every command that says what a file is."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support import git_commit
from terminal import Terminal

REPO = Path(__file__).resolve().parents[1]
NAMES = [line.split("=")[0].strip() for line in (REPO / "exercises" / "stubs.lock").read_text().splitlines()
         if "=" in line and not line.startswith(("#", "format_version"))]


def _course(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run `course ARGS` in `cwd` as a learner types it (piped)."""
    return subprocess.run([sys.executable, "-m", "course", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600, check=False)


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The course as its repository holds it: course.toml, the stubs and their record, the graders."""
    root = tmp_path_factory.mktemp("origin")
    shutil.copy(REPO / "course.toml", root)
    for top in ("exercises", "graders"):
        shutil.copytree(REPO / top, root / top, ignore=shutil.ignore_patterns("__pycache__"))
    stubs = sorted(root.glob("exercises/*/*.py"))
    finished = {path: path.read_bytes() for path in stubs}
    for path in stubs:  # as the real course's history has it: each stub was rewritten after its first commit
        path.write_bytes(finished[path].replace(b"NotImplementedError", b"NotImplementedError  # draft", 1))
    git_commit(root)
    for path, data in finished.items():
        path.write_bytes(data)
    subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "stubs"],
                   check=True, capture_output=True)
    return root


@pytest.fixture(scope="module")
def clone(origin: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A learner's fresh `git clone` of the course."""
    dest = tmp_path_factory.mktemp("learner") / "course"
    subprocess.run(["git", "clone", "-q", f"file://{origin}", str(dest)], check=True, capture_output=True)
    return dest


def _statuses(done: subprocess.CompletedProcess[str]) -> dict[str, str]:
    """Each exercise's status in a `--json` answer."""
    return {e["name"]: e["status"] for e in json.loads(done.stdout)["exercises"]}


def test_every_untouched_stub_is_not_tried_in_a_fresh_clone(clone: Path) -> None:
    """`check --all --json`, `progress --json` and `list` agree: all 25 not tried, none failed, no points."""
    assert len(NAMES) == 25
    done = _course(clone, "check", "--all", "--json")
    assert done.returncode == 1, done.stderr
    assert _statuses(done) == dict.fromkeys(NAMES, "not_tried")
    assert _statuses(_course(clone, "progress", "--json")) == dict.fromkeys(NAMES, "not_tried")
    listed = _course(clone, "list").stdout
    assert listed.count("not tried") == 25 and "failed" not in listed, listed


def test_one_check_and_inspect_say_not_started(clone: Path) -> None:
    """`course check 4` and `course inspect 4` on a stub the course rewrote after adding it say not started."""
    checked = _course(clone, "check", "4")
    assert "not tried" in checked.stdout and "failed" not in checked.stdout, checked.stdout
    assert "not started: the stub still raises" in " ".join(checked.stdout.split())
    inspected = _course(clone, "inspect", "any_sync_copy")
    assert "not started: the stub still raises NotImplementedError" in " ".join(inspected.stdout.split())


def test_watch_says_not_started(clone: Path) -> None:
    """`course watch` in a terminal grades the untouched stub as not started, not as a failure."""
    term = Terminal(["watch", "4"], cwd=clone)
    try:
        term.expect("course watch · any_sync_copy")
        screen = term.expect("not started")
        assert "✗ failed" not in screen
        term.type("q")
        assert term.proc.wait(timeout=60) == 0
    finally:
        term.close()


def test_a_fresh_workspace_and_a_fresh_release(origin: Path, tmp_path: Path) -> None:
    """`course init DIR` and `course release OUT` (cloned as students clone it) hand out stubs that read
    not tried, and the release carries the record that says so."""
    workspace = tmp_path / "ws"
    assert _course(origin, "init", str(workspace)).returncode == 0
    assert _statuses(_course(workspace, "check", "--all", "--json")) == dict.fromkeys(NAMES, "not_tried")
    instructor, released = tmp_path / "instructor", tmp_path / "release"
    shutil.copytree(origin, instructor)
    shutil.copytree(REPO / "cli", instructor / "cli", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    shutil.copy(REPO / "pyproject.toml", instructor)
    assert _course(instructor, "release", str(released)).returncode == 0
    assert (released / "exercises" / "stubs.lock").read_bytes() == (origin / "exercises" / "stubs.lock").read_bytes()
    student = tmp_path / "student"
    subprocess.run(["git", "clone", "-q", f"file://{released}", str(student)], check=True, capture_output=True)
    assert _statuses(_course(student, "check", "--all", "--json")) == dict.fromkeys(NAMES, "not_tried")
