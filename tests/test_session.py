"""The session: typed rows, the current exercise, selection, and what it records."""

from __future__ import annotations

from pathlib import Path

import pytest

from course.engine.verdict import ExerciseResult
from course.errors import UnknownExercise
from course.session import ExerciseRow, Session, exit_code, init_workspace


@pytest.fixture
def session(mini_course: Path, tmp_path: Path) -> Session:
    """A fresh workspace of the mini course, opened."""
    init_workspace(mini_course, tmp_path / "ws")
    return Session.open(mini_course, tmp_path / "ws")


def _result(name: str, status: str, **extra: object) -> ExerciseResult:
    """A graded result as the runner returns it."""
    return ExerciseResult(name=name, status=status, score=1.0 if status == "passed" else 0.0, max_score=1.0, **extra)


def test_rows_are_typed_and_in_course_order(session: Session) -> None:
    """Every exercise is one ExerciseRow, not tried, with its points known from the grader."""
    rows = session.rows()
    assert all(isinstance(r, ExerciseRow) for r in rows)
    assert [r.name for r in rows] == session.course.meta.exercises
    assert {r.status for r in rows} == {"not_tried"} and all(r.max_score is not None for r in rows)


def test_record_moves_current_and_skips_what_is_not_the_learners(session: Session) -> None:
    """A pass moves `current` on; an untried file and a platform error are never recorded."""
    first, second, third = session.course.exercises[:3]
    assert session.current() == first
    session.record([first, second, third], [
        _result(first.name, "passed"), _result(second.name, "error"), _result(third.name, "failed", not_tried=True),
    ])
    assert session.current() == second
    assert session.status(first) == "passed" and session.status(second) == session.status(third) == "not_tried"
    assert Session.open(session.course.root, session.workspace).status(first) == "passed"  # it was written


def test_select_and_next_pending(session: Session) -> None:
    """No names means the current exercise; --all means all; next_pending wraps around."""
    first, second = session.course.exercises[:2]
    assert session.select([]) == [first]
    assert session.select([], all_=True) == session.course.exercises
    assert session.select([second.name, first.name]) == [first, second]
    with pytest.raises(UnknownExercise):
        session.select(["nope"])
    session.record([second], [_result(second.name, "passed")])
    assert session.next_pending(first.name) == session.course.exercises[2]
    assert session.next_pending(session.course.exercises[-1].name) == first


def test_exit_code_policy() -> None:
    """0 all passed; 3 when the platform failed anywhere; otherwise 1."""
    assert exit_code([_result("a", "passed")]) == 0
    assert exit_code([_result("a", "passed"), _result("b", "failed")]) == 1
    assert exit_code([_result("a", "failed"), _result("b", "error")]) == 3
