"""Not tried means not tried: a file that is still the stub as handed out is not graded, wherever the learner
works and whatever the git history (`course.stubs`)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from course import stubs
from course.engine.parent import isolation, runner
from course.errors import UsageError
from course.instructor import checks, release
from course.instructor.validate import validate
from course.registry import Course, load_course
from support import git_commit

ADVERSARIAL = Path(__file__).parent / "adversarial" / "course"
STUB = "exercises/01_double/double.py"


@pytest.fixture
def course(tmp_path: Path) -> Path:
    """A one-exercise course whose stub raises NotImplementedError, as every real stub does."""
    root = tmp_path / "course"
    for top in ("exercises", "graders", "solutions"):
        shutil.copytree(ADVERSARIAL / top / "01_double", root / top / "01_double")
    (root / "course.toml").write_text('format_version = 1\ntitle = "t"\nexercises = ["double"]\n')
    stubs.record(load_course(root), [])
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
    assert r.message == "not started: the stub still raises NotImplementedError" == stubs.NOT_STARTED


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


def _git(root: Path, *args: str) -> None:
    """Run git in `root` as a learner would (a committer of their own)."""
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
           "PATH": "/usr/bin:/bin"}
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env=env)


def test_in_place_the_stub_is_the_recorded_one_whatever_the_history(course: Path, tmp_path: Path,
                                                                    no_grading: None) -> None:
    """Editing the course in place: an untouched stub is not tried even when it was rewritten after the
    commit that added it (so git's first version is another), in a full clone and in a shallow one."""
    exercise = _loaded(course).get("double")
    original = exercise.stub_path.read_text()
    exercise.stub_path.write_text(original.replace("TODO", "an older wording"))
    git_commit(course)
    exercise.stub_path.write_text(original)
    stubs.record(_loaded(course), [])
    _git(course, "commit", "-qam", "the stub, reworded")
    assert runner.grade(exercise, exercise.stub_path).not_tried
    for depth in ([], ["--depth", "1"]):
        clone = tmp_path / f"clone{len(depth)}"
        subprocess.run(["git", "clone", "-q", *depth, f"file://{course}", str(clone)], check=True, capture_output=True)
        copy = _loaded(clone).get("double")
        result = runner.grade(copy, copy.stub_path)
        assert result.not_tried and result.message == stubs.NOT_STARTED


def test_in_place_a_committed_edit_is_the_learners(course: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once the learner changes the stub and commits it, it is theirs and graded, though HEAD holds it."""
    git_commit(course)
    exercise = _loaded(course).get("double")
    exercise.stub_path.write_text("def double(x):\n    raise NotImplementedError('still thinking')\n")
    _git(course, "commit", "-qam", "mine")
    graded = []
    monkeypatch.setattr(isolation, "run_isolated", lambda *a, **k: graded.append(1) or isolation.Outcome(0))
    assert not runner.grade(exercise, exercise.stub_path).not_tried and graded == [1]


def test_without_a_record_in_place_is_graded_and_elsewhere_is_compared(course: Path, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A course that records no stubs: a file in a workspace of its own is compared with the stub file;
    a file edited in place cannot be told from the stub, so it is graded (never taken for the stub)."""
    (course / stubs.LOCK).unlink()
    exercise = _loaded(course).get("double")
    mine = tmp_path / "ws" / STUB
    mine.parent.mkdir(parents=True)
    shutil.copy(exercise.stub_path, mine)
    assert stubs.untouched(exercise, mine) == stubs.NOT_STARTED
    assert stubs.untouched(exercise, exercise.stub_path) == ""


def test_the_stub_as_handed_out_is_found_in_history(course: Path, tmp_path: Path) -> None:
    """When the stub file was changed (in place, committed), its recorded version comes from git: reset
    restores it and a release ships it; where no commit holds it, the release refuses with a sentence."""
    git_commit(course)
    exercise = _loaded(course).get("double")
    original = exercise.stub_path.read_bytes()
    exercise.stub_path.write_text("def double(x):\n    return 2 * x\n")
    _git(course, "commit", "-qam", "solved in place")
    assert stubs.handed_out(exercise) == original
    plan = release.files(_loaded(course))
    assert plan[exercise.stub_rel] == original and plan[stubs.LOCK] == course / stubs.LOCK
    (course / ".git").rename(course / "git-gone")
    with pytest.raises(UsageError, match="is not the stub exercises/stubs.lock records"):
        release.files(_loaded(course))


def test_validate_names_a_stub_changed_without_its_record(course: Path) -> None:
    """A stub edited without `--record-stubs` is a problem validate names, with the command that fixes it;
    recording it clears the problem and says which exercises changed."""
    exercise = _loaded(course).get("double")
    assert not stubs.stale(exercise)
    exercise.stub_path.write_text(exercise.stub_path.read_text() + "# one more line\n")
    problems = checks.static_problems(_loaded(course).get("double"))
    assert any("--record-stubs" in p and "is not the one exercises/stubs.lock records" in p for p in problems)
    assert stubs.record(_loaded(course), ["double"]) == ["double"]
    assert not stubs.stale(_loaded(course).get("double"))
    assert stubs.record(_loaded(course), []) == []


def test_a_damaged_record_is_one_sentence(course: Path) -> None:
    """A lock file that is not TOML is the course's error, named with how to rebuild it."""
    (course / stubs.LOCK).write_text("[stubs\n")
    stubs._RECORDS.clear()
    with pytest.raises(UsageError, match="cannot be read .* --record-stubs"):
        stubs.untouched(_loaded(course).get("double"), course / STUB)


def test_a_stub_that_runs_is_graded(course: Path, tmp_path: Path) -> None:
    """A stub that raises nothing (a given version to improve) is graded like any file."""
    exercise = _loaded(course).get("double")
    exercise.stub_path.write_text("def double(x):\n    return x + x + 0\n")
    mine = tmp_path / "ws" / STUB
    mine.parent.mkdir(parents=True)
    shutil.copy(exercise.stub_path, mine)
    assert stubs.untouched(exercise, mine) == ""
    assert not stubs.raises_not_implemented(b"def f():\n    return NotImplemented\n")
    assert stubs.raises_not_implemented(b"def f():\n    raise NotImplementedError\n")
