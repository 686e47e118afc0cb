"""Merging the judge's and the executor's verdicts: the grader's order, and a stop said where it happened."""

from __future__ import annotations

from pathlib import Path

import pytest

from course.engine.judge import remote
from course.engine.parent import judging
from course.engine.parent.runner import grade
from course.engine.parent.verdict import NOT_RUN, CheckResult, ExerciseResult, summarize
from course.registry import load_course

GRADER = '''import pytest


@pytest.mark.judge
def test_values(submission):
    """values"""


def test_donates(submission):
    """donates"""


@pytest.mark.judge
def test_dtype(submission):
    """dtype"""


def test_compiles(submission):
    """compiles"""
'''


def _exercise(mini_course: Path):
    """The mini-course's first exercise, with a grader that marks two of its four checks `judge`."""
    exercise = load_course(mini_course).exercises[0]
    exercise.grader_path.write_text(GRADER, encoding="utf-8")
    return exercise


def _check(name: str, status: str = "passed", message: str = "") -> CheckResult:
    """One check's verdict worth 1 point."""
    return CheckResult(name, name[5:], status, 1.0 if status == "passed" else 0.0, 1.0, message)


def _side(*checks: CheckResult, status: str = "", stopped: str = "") -> ExerciseResult:
    """One side's result (`stopped`: why it was stopped before its report was whole)."""
    result = summarize(ExerciseResult(name="ex_pass", status="failed", checks=list(checks)))
    result.status, result.stopped = status or result.status, stopped
    return result


def test_a_grader_with_judge_checks_is_split(mini_course: Path) -> None:
    """A grader that marks a check `judge` is split; one that does not, or a grading of several processes, is not."""
    exercise = load_course(mini_course).exercises[0]
    assert not judging.wanted(exercise, hidden=False)
    assert judging.wanted(_exercise(mini_course), hidden=False)


def test_checks_come_in_the_graders_order(mini_course: Path) -> None:
    """Both sides' checks are merged in the order the grader defines them, and scored together."""
    exercise = _exercise(mini_course)
    executor = _side(_check("test_donates"), _check("test_compiles", "failed", "compiled twice"))
    judged = _side(_check("test_values"), _check("test_dtype"))
    merged = judging.merge(exercise, executor, judged)
    assert [c.id for c in merged.checks] == ["test_values", "test_donates", "test_dtype", "test_compiles"]
    assert (merged.status, merged.score, merged.max_score) == ("failed", 3.0, 4.0)


def test_a_stop_during_a_judge_check_is_said_there(mini_course: Path) -> None:
    """When the executor is stopped while it answers the judge, the judge's check takes the stop's reason,
    and the executor's checks, which never started, are not run."""
    exercise = _exercise(mini_course)
    why = "your code used 60 s of CPU time, this exercise's limit"
    executor = _side(_check("test_donates", "failed", why), _check("test_compiles", NOT_RUN, "not run"),
                     status="timeout", stopped=why)
    judged = _side(_check("test_values", "failed", remote.GONE), _check("test_dtype", "failed", remote.GONE))
    merged = judging.merge(exercise, executor, judged)
    by_id = {c.id: c for c in merged.checks}
    assert by_id["test_values"].message == why
    assert all(by_id[n].status == NOT_RUN for n in ("test_donates", "test_dtype", "test_compiles"))
    assert merged.status == "timeout" and merged.message == f'{why} (during "values")'


def test_checks_before_the_stop_keep_their_verdicts(mini_course: Path) -> None:
    """The sides take turns in the grader's order: a stop in the judge's third check leaves the executor's
    second check its verdict, even a failure of its own, and takes the reason there."""
    exercise = _exercise(mini_course)
    why = "the 2 processes stopped making progress for 10 s"
    executor = _side(_check("test_donates", "failed", "not donated"), _check("test_compiles", "failed", why),
                     stopped=why)
    judged = _side(_check("test_values"), _check("test_dtype", "failed", remote.GONE))
    merged = judging.merge(exercise, executor, judged)
    by_id = {c.id: c for c in merged.checks}
    assert (by_id["test_values"].status, by_id["test_donates"].message) == ("passed", "not donated")
    assert by_id["test_dtype"].message == why and by_id["test_compiles"].status == NOT_RUN
    assert merged.message == f'{why} (during "dtype")'


def test_a_stop_in_an_executor_check_is_said_there(mini_course: Path) -> None:
    """When the executor is stopped in its own check, that check keeps the reason, and the judge's later
    checks, whose answers never came, are not run."""
    exercise = _exercise(mini_course)
    why = "your code used 20 s of CPU time in this check"
    executor = _side(_check("test_donates", "failed", why), _check("test_compiles", NOT_RUN, "not run"),
                     stopped=why)
    judged = _side(_check("test_values"), _check("test_dtype", "failed", remote.GONE))
    merged = judging.merge(exercise, executor, judged)
    by_id = {c.id: c for c in merged.checks}
    assert by_id["test_donates"].message == why and by_id["test_values"].status == "passed"
    assert by_id["test_dtype"].status == NOT_RUN and 'during "donates"' in by_id["test_dtype"].message
    assert merged.message == f'{why} (during "donates")'


def test_a_judge_check_that_words_the_executors_absence_itself_is_not_run_after_a_stop(mini_course: Path) -> None:
    """A grader that catches the executor's absence and words it in a sentence of its own (its text still
    carries GONE's) makes no second failure after a stop: the check is not run, and the reason is said once."""
    exercise = _exercise(mini_course)
    why = "your code used 8 s of CPU time in this check"
    executor = _side(_check("test_donates"), _check("test_compiles", NOT_RUN, "not run"), stopped=why)
    wrapped = f"`f` could not be traced: it raised ExecutorGone: {remote.GONE}. Keep it traceable."
    judged = _side(_check("test_values", "failed", remote.GONE), _check("test_dtype", "failed", wrapped))
    merged = judging.merge(exercise, executor, judged)
    by_id = {c.id: c for c in merged.checks}
    assert by_id["test_values"].message == why
    assert by_id["test_dtype"].status == NOT_RUN and 'during "values"' in by_id["test_dtype"].message
    assert [c.id for c in merged.checks if c.status == "failed"] == ["test_values"]


def test_a_stop_after_the_executors_last_check(mini_course: Path) -> None:
    """The executor stopped while it answered the judge's last check, all its own checks done: that check
    takes the reason."""
    exercise = _exercise(mini_course)
    why = "your code used more than 4096 MiB of memory"
    executor = _side(_check("test_donates"), stopped=why)
    judged = _side(_check("test_values"), _check("test_dtype", "failed", remote.GONE))
    merged = judging.merge(exercise, executor, judged)
    assert {c.id: c.message for c in merged.checks}["test_dtype"] == why
    assert merged.status == "failed" and merged.message == f'{why} (during "dtype")'


def test_a_platform_failure_on_either_side_is_the_result(mini_course: Path) -> None:
    """A side that failed to start (an error without checks) is the whole result: never a pass."""
    exercise = _exercise(mini_course)
    broken = ExerciseResult(name="ex_pass", status="error", message="the judge process failed")
    assert judging.merge(exercise, _side(_check("test_donates")), broken) is broken
    assert judging.merge(exercise, broken, _side(_check("test_values"))) is broken


TURNS = '''import os

import pytest


def test_first(submission):
    """first"""
    assert submission.value() == 1


@pytest.mark.judge
def test_crashes(submission):
    """crashes"""
    submission.crash()


def test_last(submission):
    """last"""
    os.write(1, b"ran")
'''

CRASHES = '''import os


def value():
    return 1


def crash():
    os._exit(3)
'''


@pytest.mark.slow
def test_a_crash_in_a_judge_call_is_said_there_and_the_checks_before_it_keep_their_verdicts(
        mini_course: Path, tmp_path: Path) -> None:
    """A real split grading takes turns in the grader's order: the executor's first check passes, the
    learner's function the judge calls next ends the executor, so that judge check fails for it, and the
    executor's last check, never started, is not run."""
    exercise = load_course(mini_course).exercises[0]
    exercise.grader_path.write_text(TURNS, encoding="utf-8")
    path = tmp_path / "ex_pass.py"
    path.write_text(CRASHES, encoding="utf-8")
    result = grade(exercise, path, seed=1, skip_stub=False)
    by_id = {c.id: c for c in result.checks}
    assert [c.id for c in result.checks] == ["test_first", "test_crashes", "test_last"]
    assert by_id["test_first"].status == "passed", by_id["test_first"]
    assert by_id["test_crashes"].status == "failed" and by_id["test_crashes"].message != remote.GONE
    assert by_id["test_last"].status == NOT_RUN and 'during "crashes"' in by_id["test_last"].message


ALL_JUDGED = '''import pytest


@pytest.mark.judge
def test_doubles(submission):
    """doubles"""
    assert submission.double(3) == 6


@pytest.mark.judge
def test_zero(submission):
    """zero"""
    assert submission.double(0) == 0
'''


def test_a_grader_whose_every_check_is_the_judges_grades(mini_course: Path, tmp_path: Path) -> None:
    """The executor of a grader whose every check is a judge check has none of its own: it only answers the
    judge, and the verdict is the judge's (a pass, or a fail), never "the grader defines no checks"."""
    exercise = load_course(mini_course).exercises[0]
    exercise.grader_path.write_text(ALL_JUDGED, encoding="utf-8")
    right, wrong = tmp_path / "right.py", tmp_path / "wrong.py"
    right.write_text("def double(x):\n    return 2 * x\n", encoding="utf-8")
    wrong.write_text("def double(x):\n    return x + 2\n", encoding="utf-8")
    passed = grade(exercise, right, seed=1, skip_stub=False)
    assert passed.status == "passed" and [c.id for c in passed.checks] == ["test_doubles", "test_zero"], passed
    failed = grade(exercise, wrong, seed=1, skip_stub=False)
    assert failed.status == "failed" and [c.status for c in failed.checks] == ["failed", "failed"], failed


def test_a_grading_with_no_check_on_either_side_is_the_courses_problem(mini_course: Path) -> None:
    """An executor may have no checks, but when the judge has none either the grader defines none: an error
    that sends the instructor to `course validate`, never a pass."""
    merged = judging.merge(_exercise(mini_course), _side(), _side())
    assert merged.status == "error" and "defines no checks" in merged.message


def _expected(*names: str) -> list[dict]:
    """What a manifest says of the other side's checks: each worth 1 point."""
    return [{"id": name, "title": name[5:], "max_score": 1.0, "hidden": False} for name in names]


def test_an_executor_that_reported_nothing_has_its_checks_failed_not_dropped(mini_course: Path) -> None:
    """An executor stopped before its manifest (at a limit) reported no check: the checks the judge's manifest
    says it runs fail for its reason, and the judge's passes cannot stand for the whole grader."""
    exercise = _exercise(mini_course)
    why = "your code used 60 s of CPU time, this exercise's limit"
    executor = ExerciseResult(name="ex_pass", status="timeout", message=why)
    judged = _side(_check("test_values"), _check("test_dtype"))
    judged.elsewhere = _expected("test_donates", "test_compiles")
    merged = judging.merge(exercise, executor, judged)
    assert [c.id for c in merged.checks] == ["test_values", "test_donates", "test_dtype", "test_compiles"]
    assert {c.id: c.message for c in merged.checks}["test_donates"] == why
    assert (merged.status, merged.score, merged.max_score) == ("timeout", 2.0, 4.0)


@pytest.mark.parametrize("side", ["executor", "judge"])
def test_tampering_on_either_side_voids_every_check(mini_course: Path, side: str) -> None:
    """A side whose report says the machinery was tampered with, or whose report was removed (so that it says
    nothing, perhaps hiding that), fails every check of both sides: none counts, the other side's passes
    included, and every check of the grader is listed even when that side's manifest is gone."""
    exercise = _exercise(mini_course)
    why = "the grading's report was removed or changed while your code ran, so no check can be trusted"
    executor = _side(_check("test_donates"), _check("test_compiles"))
    judged = _side(_check("test_values"), _check("test_dtype"))
    executor.elsewhere, judged.elsewhere = _expected("test_values", "test_dtype"), _expected("test_donates",
                                                                                            "test_compiles")
    spoiled = executor if side == "executor" else judged
    spoiled.checks, spoiled.tampered, spoiled.status, spoiled.message = [], True, "failed", why
    merged = judging.merge(exercise, executor, judged)
    assert [c.id for c in merged.checks] == ["test_values", "test_donates", "test_dtype", "test_compiles"]
    assert all(c.status == "failed" and c.score == 0 and c.message == why for c in merged.checks)
    assert (merged.status, merged.score, merged.max_score, merged.tampered) == ("failed", 0.0, 4.0, True)
    assert merged.message == why


def test_answers_the_executors_report_does_not_vouch_for_void_every_check(mini_course: Path) -> None:
    """The judge heard more answers than the executor's signed report vouches for: that report was put back
    to an earlier one (or something answered the judge past the machinery), so no check counts."""
    exercise = _exercise(mini_course)
    executor = _side(_check("test_donates"), _check("test_compiles"))
    judged = _side(_check("test_values"), _check("test_dtype"))
    executor.served, judged.heard = 3, 4
    merged = judging.merge(exercise, executor, judged)
    assert merged.tampered and merged.score == 0 and merged.message == judging.UNVOUCHED
    executor, judged = _side(_check("test_donates"), _check("test_compiles")), _side(_check("test_values"))
    executor.served, judged.heard = 4, 4  # the control: every answer vouched for
    assert judging.merge(exercise, executor, judged).score == 3.0


def test_a_judge_that_a_signal_ended_is_the_learners_doing_only_where_their_code_can_reach_it(
        monkeypatch: pytest.MonkeyPatch, mini_course: Path) -> None:
    """Without a PID namespace the judge is a process of the learner's own user, which their code can kill:
    then its end by a signal voids the grading, as the learner's doing (never exit 3); in a namespace it cannot
    be reached, and the signal is the machine's."""
    from course.engine.contain import protections

    exercise = _exercise(mini_course)
    monkeypatch.setattr(protections, "contained", lambda: None)
    reachable = judging._signalled(exercise, 9)
    assert (reachable.status, reachable.tampered) == ("failed", True) and "signal 9" in reachable.message
    monkeypatch.setattr(protections, "contained", lambda: object())
    assert judging._signalled(exercise, 9).status == "error"
