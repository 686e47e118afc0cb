"""The session: typed rows, the current exercise, selection, and what it records."""

from __future__ import annotations

from pathlib import Path

import pytest

from course.engine.parent.verdict import ExerciseResult
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


def test_a_stub_graded_again_is_not_tried_whatever_came_before(session: Session) -> None:
    """A failure, then an untouched stub: the status is back to not tried, with no points."""
    ex = session.course.exercises[1]
    session.record([ex], [_result(ex.name, "failed")])
    assert session.status(ex) == "failed"
    session.record([ex], [_result(ex.name, "failed", not_tried=True)])
    assert session.status(ex) == "not_tried" and session.rows()[1].score == 0
    assert Session.open(session.course.root, session.workspace).status(ex) == "not_tried"


def test_a_cancelled_grading_is_never_recorded(session: Session) -> None:
    """A grading stopped on request (watch's new save, `q`) leaves the stored status as it was."""
    ex = session.course.exercises[0]
    session.record([ex], [_result(ex.name, "passed")])
    session.record([ex], [_result(ex.name, "cancelled")])
    assert session.status(ex) == "passed"


def test_points_total_is_the_sum_of_the_rows(session: Session) -> None:
    """Partial credit counts: a failing exercise's row shows the points its passing checks earned,
    and the total adds up exactly what the rows show."""
    first, second = session.course.exercises[:2]
    partial = ExerciseResult(name=second.name, status="failed", score=1.0, max_score=3.0)
    session.record([first, second], [_result(first.name, "passed"), partial])
    rows = session.rows()
    assert [r.score for r in rows[:2]] == [1.0, 1.0] and rows[1].status == "failed"
    summary = session.summary()
    assert summary.score == sum(r.score for r in rows) == 2.0
    assert summary.max_score == sum(r.max_score or 0 for r in rows)


def test_reset_shows_not_passed_and_keeps_the_solution_open(session: Session) -> None:
    """After a reset the exercise is not tried again (so it is current), yet its solution stays open."""
    first = session.course.exercises[0]
    session.record([first], [_result(first.name, "passed")])
    session.submission(first).write_text("def double(x):\n    return x + x\n")
    backup = session.reset(first)
    assert backup is not None and session.status(first) == "not_tried" and session.current() == first
    assert session.passed_ever(first) and session.rows()[0].score == 0


def test_restore_brings_back_the_latest_backup(session: Session) -> None:
    """`restore` puts the last reset's version back; the file it replaces is kept unless it is the stub."""
    first = session.course.exercises[0]
    path = session.submission(first)
    path.write_text("# mine\n")
    session.reset(first)
    restored, kept = session.restore(first)
    assert path.read_text() == "# mine\n" and kept is None and restored.read_text() == "# mine\n"
    path.write_text("# newer\n")
    _, kept = session.restore(first)
    assert path.read_text() == "# mine\n" and kept is not None and kept.read_text() == "# newer\n"


def test_restore_without_a_backup_says_so(session: Session) -> None:
    """Nothing to restore is one sentence, and the file is left alone."""
    from course.errors import UsageError

    with pytest.raises(UsageError, match="no backup of `ex_pass`"):
        session.restore(session.course.exercises[0])


def test_defaults_current_and_last_passed(session: Session) -> None:
    """No name means the current exercise; the solution's default is the one passed last."""
    first, second = session.course.exercises[:2]
    assert session.named_or_current(None) == first and session.named_or_current("2") == second
    assert session.last_passed() is None
    session.record([second], [_result(second.name, "passed")])
    assert session.last_passed() == second


def test_each_exercise_is_recorded_as_it_ends_with_its_own_time(session: Session,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """`check` stores each verdict the moment its grading ends, stamped with that moment: a later
    exercise never shares an earlier one's time, and an earlier one is on file before the next ends."""
    first, second = session.course.exercises[:2]
    clock = iter(["2026-01-01T12:00:00Z", "2026-01-01T12:00:09Z"])
    monkeypatch.setattr("course.session.now_iso", lambda: next(clock))
    seen_on_file: list[set[str]] = []

    def grade(exercises: list, *, on_result: object = None, **_: object) -> list[ExerciseResult]:
        """Two gradings, one after the other, each reported as it ends."""
        results = []
        for e in exercises:
            seen_on_file.append(set(Session.open(session.course.root, session.workspace).progress.exercises))
            results.append(_result(e.name, "passed"))
            on_result(results[-1])  # type: ignore[operator]
        return results

    monkeypatch.setattr(session, "grade", grade)
    session.check([first, second])
    assert seen_on_file == [set(), {first.name}]
    stored = Session.open(session.course.root, session.workspace).progress.exercises
    assert [stored[e.name].last_checked for e in (first, second)] == ["2026-01-01T12:00:00Z", "2026-01-01T12:00:09Z"]
