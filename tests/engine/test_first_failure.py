"""A grading that stops at its first failing check (`course validate --mutants`): both sides of a split stop."""

from __future__ import annotations

from pathlib import Path

import pytest

from course.engine.parent.runner import grade
from course.engine.parent.verdict import NOT_RUN
from course.registry import load_course

# Executor and judge take turns: a, c and e run beside the learner's code, b and d in the judge. The
# last two fail whenever they run, saying so, so a check that was not run cannot pass for one that did.
GRADER = '''import pytest


def test_a(submission):
    """a"""
    assert submission.value() == 1


@pytest.mark.judge
def test_b(submission):
    """b"""
    assert submission.judged() == 1, "b: the judge's value is wrong"


def test_c(submission):
    """c"""
    assert submission.executed() == 1, "c: the executor's value is wrong"


@pytest.mark.judge
def test_d(submission):
    """d"""
    assert submission.value() == 0, "d ran"


def test_e(submission):
    """e"""
    assert False, "e ran"
'''


def _file(tmp_path: Path, judged: int, executed: int) -> Path:
    """A learner's file whose `judged` and `executed` return these numbers."""
    path = tmp_path / "ex_pass.py"
    path.write_text(f"def value():\n    return 1\n\n\ndef judged():\n    return {judged}\n\n\n"
                    f"def executed():\n    return {executed}\n", encoding="utf-8")
    return path


def _statuses(mini_course: Path, path: Path, first_failure: bool) -> dict[str, tuple[str, str]]:
    """Each check's status and message, graded for real as a split grading."""
    exercise = load_course(mini_course).exercises[0]
    exercise.grader_path.write_text(GRADER, encoding="utf-8")
    result = grade(exercise, path, seed=3, skip_stub=False, first_failure=first_failure)
    assert [c.id for c in result.checks] == ["test_a", "test_b", "test_c", "test_d", "test_e"], result
    assert result.status == "failed", result
    return {c.id: (c.status, c.message) for c in result.checks}


@pytest.mark.slow
def test_a_failing_judge_check_stops_the_executor_too(mini_course: Path, tmp_path: Path) -> None:
    """The judge's check b fails: the executor runs none of its later checks, and they are not run, not failed."""
    got = _statuses(mini_course, _file(tmp_path, judged=2, executed=1), first_failure=True)
    assert got["test_a"][0] == "passed"
    assert got["test_b"] == ("failed", "b: the judge's value is wrong")
    for later in ("test_c", "test_d", "test_e"):
        assert got[later][0] == NOT_RUN, got
        assert got[later][1] == 'not run: the grading stopped at its first failing check, "b"', got


@pytest.mark.slow
def test_a_failing_executor_check_stops_the_judge_too(mini_course: Path, tmp_path: Path) -> None:
    """The executor's check c fails: the judge's next check finds the executor gone, and is not run either."""
    got = _statuses(mini_course, _file(tmp_path, judged=1, executed=2), first_failure=True)
    assert [got[n][0] for n in ("test_a", "test_b")] == ["passed", "passed"]
    assert got["test_c"] == ("failed", "c: the executor's value is wrong")
    assert got["test_d"][0] == NOT_RUN and got["test_e"][0] == NOT_RUN, got
    assert "ran" not in got["test_d"][1] + got["test_e"][1]


@pytest.mark.slow
def test_without_it_every_check_runs(mini_course: Path, tmp_path: Path) -> None:
    """The default grading runs every check after a failure: d and e run, and say so."""
    got = _statuses(mini_course, _file(tmp_path, judged=2, executed=2), first_failure=False)
    assert got["test_c"][0] == "failed"
    assert got["test_d"] == ("failed", "d ran") and got["test_e"] == ("failed", "e ran")
