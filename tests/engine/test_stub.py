"""Not tried means not tried: a file that is still the stub is not graded, wherever the learner works."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from course.engine import isolation, runner, stub
from course.instructor.validate import validate
from course.registry import Course, load_course
from support import git_commit

ADVERSARIAL = Path(__file__).parents[1] / "adversarial" / "course"
STUB = "exercises/01_double/double.py"


@pytest.fixture
def course(tmp_path: Path) -> Path:
    """A one-exercise course whose stub raises NotImplementedError, as every real stub does."""
    root = tmp_path / "course"
    for top in ("exercises", "graders", "solutions"):
        shutil.copytree(ADVERSARIAL / top / "01_double", root / top / "01_double")
    (root / "course.toml").write_text('format_version = 1\ntitle = "t"\nexercises = ["double"]\n')
    return root


@pytest.fixture
def no_grading(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any grading process started from here on fails the test: not tried must mean not graded."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a grading process was started for a file that is still the stub")

    monkeypatch.setattr(isolation, "run_isolated", refuse)


def _loaded(root: Path) -> Course:
    return load_course(root)


def test_a_copy_of_the_stub_is_not_tried_and_not_graded(course: Path, tmp_path: Path, no_grading: None) -> None:
    """The stub in a workspace of its own, with other spacing and line endings, is not tried: no grading,
    no points, what the exercise is worth, and the reason in one line."""
    exercise = _loaded(course).get("double")
    mine = tmp_path / "ws" / STUB
    mine.parent.mkdir(parents=True)
    mine.write_bytes(exercise.stub_path.read_bytes().replace(b"\n", b"  \r\n") + b"\n\n")
    r = runner.grade(exercise, mine)
    assert r.not_tried and r.status == "not_tried" and r.score == 0 and r.checks == []
    assert r.max_score == exercise.max_score == 2
    assert r.message == "not started: the stub still raises NotImplementedError" == stub.NOT_STARTED


def test_validate_and_an_edited_file_are_graded(course: Path, tmp_path: Path) -> None:
    """With `skip_stub=False` (validate's way) the stub is graded and fails; one changed character is tried."""
    exercise = _loaded(course).get("double")
    graded = runner.grade(exercise, exercise.stub_path, skip_stub=False)
    assert not graded.not_tried and graded.status == "failed" and len(graded.checks) == 2
    mine = tmp_path / "ws" / STUB
    mine.parent.mkdir(parents=True)
    mine.write_text(exercise.stub_path.read_text().replace('"TODO"', '"soon"'))
    assert runner.grade(exercise, mine).status == "failed"
    report = validate(_loaded(course), ["double"], jobs=1)
    assert report.sound, report


def test_in_place_the_stub_is_the_one_git_added(course: Path, no_grading: None,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Editing the course in place: untouched, the stub is not tried; once the learner commits their own
    version it is theirs, never the stub, even though it is what HEAD holds."""
    git_commit(course)
    exercise = _loaded(course).get("double")
    assert runner.grade(exercise, exercise.stub_path).not_tried
    exercise.stub_path.write_text("def double(x):\n    raise NotImplementedError('still thinking')\n")
    subprocess.run(["git", "-C", str(course), "commit", "-qam", "mine"], check=True, capture_output=True,
                   env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                        "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"})
    graded = []
    monkeypatch.setattr(isolation, "run_isolated", lambda *a, **k: graded.append(1) or isolation.Outcome(0))
    assert not runner.grade(exercise, exercise.stub_path).not_tried and graded == [1]


def test_a_shallow_clone_or_no_checkout_says_nothing(course: Path, tmp_path: Path) -> None:
    """Where git cannot tell the stub as it was added (a shallow clone, as CI makes, or no checkout at
    all), a file edited in place is graded: a learner's work is never taken for the stub."""
    exercise = _loaded(course).get("double")
    assert stub.pristine(exercise, exercise.stub_path) is None  # no checkout
    git_commit(course)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{course}", str(clone)], check=True,
                   capture_output=True)
    copy = _loaded(clone).get("double")
    assert stub.pristine(copy, copy.stub_path) is None
    assert stub.pristine(exercise, exercise.stub_path) == exercise.stub_path.read_bytes()


def test_a_stub_that_runs_is_graded(course: Path, tmp_path: Path) -> None:
    """A stub that raises nothing (a given version to improve) is graded like any file."""
    exercise = _loaded(course).get("double")
    exercise.stub_path.write_text("def double(x):\n    return x + x + 0\n")
    mine = tmp_path / "ws" / STUB
    mine.parent.mkdir(parents=True)
    shutil.copy(exercise.stub_path, mine)
    assert stub.untouched(exercise, mine) == ""
    assert not stub.raises_not_implemented(b"def f():\n    return NotImplemented\n")
    assert stub.raises_not_implemented(b"def f():\n    raise NotImplementedError\n")
