"""What a student always sees of a graded exercise: public checks' verdicts, never a hidden one's."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from class_helpers import assert_hides_hidden
from course.instructor import budget
from course.instructor.results import Record, results_json, visible_line
from course.registry import load_course

MINI = Path(__file__).resolve().parents[1] / "fixtures" / "mini_course"


def _stopped_with_only_the_hidden_check_reported() -> tuple[object, Record]:
    """ex_fail (3 public points, 2 hidden) stopped by the budget after its judge reported the hidden check
    (not run) and before its executor reported any public one: what a loaded Gradescope run can leave."""
    exercise = load_course(MINI).get("ex_fail")
    hidden = {"id": "test_negative", "title": "test_negative", "status": "not_run", "score": 0.0,
              "max_score": exercise.hidden_max_score, "hidden": True,
              "message": 'not run: the grading stopped during "test_negative"'}
    message = f'{budget.STOPPED} (during "test_negative")'
    return exercise, Record("ex_fail", "failed", 0.0, 5.0, message, "ex_fail.py", None, checks=[hidden])


def test_a_grading_stopped_before_any_public_check_still_shows_the_public_points() -> None:
    """The public points are one visible test scoring 0 that says the budget stopped the grading, in words that
    name no hidden check; the hidden check stays hidden; the visible line counts the public points."""
    exercise, rec = _stopped_with_only_the_hidden_check_reported()
    assert exercise.max_score and exercise.hidden_max_score
    line = visible_line(exercise, rec)
    assert line.startswith(f"ex_fail: failed, 0/{exercise.max_score:g} (the grading was stopped when the "
                           "autograder's time budget ran out"), line
    results = results_json([exercise], {"ex_fail": rec}, {})
    visible = [t for t in results["tests"] if t["visibility"] == "visible"]
    assert [(t["score"], t["max_score"], t["status"]) for t in visible] == [(0.0, exercise.max_score, "failed")]
    assert "test_negative" not in visible[0]["output"] and "budget ran out" in visible[0]["output"]
    assert [t["visibility"] for t in results["tests"]] == ["visible", "after_published"]
    assert sum(t["max_score"] for t in results["tests"]) == exercise.max_score + exercise.hidden_max_score
    results["output"] = line
    results.setdefault("extra_data", {})["exercises"] = {"ex_fail": rec.to_dict()}
    assert_hides_hidden(results)


def test_an_exercise_with_only_hidden_points_says_they_are_shown_later() -> None:
    """With no public points at all, the line says the checks are shown when grades are published."""
    exercise, rec = _stopped_with_only_the_hidden_check_reported()
    exercise = dataclasses.replace(exercise, max_score=0.0)
    assert visible_line(exercise, rec) == "ex_fail: graded; its checks are shown when grades are published"
