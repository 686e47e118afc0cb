"""`course autograder prairielearn`: each exercise a question, graded by the external grader in PrairieLearn's layout.

PrairieLearn mounts the course's `serverFilesCourse` entries under /grade/serverFilesCourse, the
student's files under /grade/student and the question's data at /grade/data/data.json, runs the
question's entrypoint with its environment, and reads /grade/results/results.json. These tests
rebuild that layout in a temporary root, run the entrypoint `info.json` names, and check the
results against the fields PrairieLearn documents.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from class_helpers import MINI, SOLUTION, STUB, WRONG, class_course, write_folder
from course.cli import app
from course.engine.contain import limits
from course.instructor import prairielearn
from course.registry import load_course

REPO = Path(__file__).resolve().parents[2]

HIDDEN_ONLY = (MINI / "solutions" / "02_ex_fail" / "wrong" / "positive_only.py").read_text(encoding="utf-8")


@pytest.fixture
def written(tmp_path: Path, cli: CliRunner) -> Path:
    """The class course written as PrairieLearn questions and their grader."""
    course = class_course(tmp_path)
    done = cli.invoke(app, ["autograder", "prairielearn", "--out", str(tmp_path / "pl"), "--image", "me/grader:1",
                            "--course", str(course)])
    assert done.exit_code == 0, done.output
    return tmp_path / "pl"


def assert_pl_results(results: dict) -> None:
    """PrairieLearn's documented results: `gradable`, a `score` in [0, 1] when gradable, tests with points."""
    assert isinstance(results.get("gradable", True), bool)
    if results.get("gradable", True):
        assert isinstance(results["score"], int | float) and 0 <= results["score"] <= 1
    else:
        assert results["format_errors"] and all(isinstance(e, str) for e in results["format_errors"])
    for test in results.get("tests", []):
        assert isinstance(test["name"], str) and isinstance(test.get("message", ""), str)
        assert isinstance(test["points"], int | float) and isinstance(test["max_points"], int | float)
        assert 0 <= test["points"] <= test["max_points"]
    assert len(json.dumps(results)) < 1_000_000  # PrairieLearn's limit on the file


def _grade(written: Path, tmp_path: Path, name: str, files: dict[str, str], python: str = sys.executable) -> dict:
    """Grade one submission of question `name` as PrairieLearn's external grader runs it."""
    info = json.loads((written / "questions" / name / "info.json").read_text(encoding="utf-8"))
    options = info["externalGradingOptions"]
    root = tmp_path / "grade"
    shutil.rmtree(root, ignore_errors=True)
    for entry in options["serverFilesCourse"]:
        shutil.copytree(written / "serverFilesCourse" / entry, root / "serverFilesCourse" / entry)
    shutil.copytree(written / "questions" / name / "tests", root / "tests")
    write_folder(root / "student", files)
    write_folder(root / "data", {"data.json": json.dumps({"params": {}, "submitted_answers": {}})})
    entrypoint = root / options["entrypoint"].removeprefix("/grade/")
    os.chmod(entrypoint, 0o755)  # PrairieLearn makes the entrypoint executable before it runs it
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("COURSE_")}, **options["environment"],
           "GRADE_ROOT": str(root), "GRADER_PYTHON": python}
    done = subprocess.run([str(entrypoint)], cwd=root, env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    assert_pl_results(results)
    return results


def test_each_exercise_is_a_question_graded_externally(written: Path) -> None:
    """info.json turns external grading on with the image, the grader's entrypoint and the exercise; the grader
    holds the hidden checks but no solution; the question's editor starts from the stub."""
    info = json.loads((written / "questions" / "ex_fail" / "info.json").read_text(encoding="utf-8"))
    options = info["externalGradingOptions"]
    assert info["gradingMethod"] == "External" and options["enabled"] and options["image"] == "me/grader:1"
    assert options["entrypoint"].startswith("/grade/serverFilesCourse/") and options["environment"] == {
        "COURSE_EXERCISE": "ex_fail"}
    assert options["timeout"] == 100 + prairielearn.STARTUP_S  # ex_fail: 20 s of CPU, hence 100 s of wall clock
    grader = written / "serverFilesCourse" / "course_grader"
    assert (grader / "course" / "graders" / "02_ex_fail" / "hidden" / "test_ex_fail_hidden.py").is_file()
    assert not (grader / "course" / "solutions").exists() and "FROM python:3.11" in (grader / "Dockerfile").read_text()
    assert (written / "questions" / "ex_pass" / "tests" / "initial_code.py").read_text() == STUB
    assert 'file-name="ex_pass.py"' in (written / "questions" / "ex_pass" / "question.html").read_text()


def test_the_grader_scores_a_correct_and_a_wrong_submission(written: Path, tmp_path: Path) -> None:
    """The score is a fraction; public checks are tests; hidden ones count in one test that names none."""
    correct = _grade(written, tmp_path, "ex_fail", {"ex_fail.py": SOLUTION})
    assert correct["gradable"] and correct["score"] == 1.0
    assert [t["max_points"] for t in correct["tests"]] == [1, 2, 2] and correct["tests"][-1]["message"] == ""
    hidden_only = _grade(written, tmp_path, "ex_fail", {"ex_fail.py": HIDDEN_ONLY})
    assert hidden_only["score"] == 0.6 and "negative" not in json.dumps(hidden_only)
    wrong = _grade(written, tmp_path, "ex_fail", {"ex_fail.py": WRONG})
    assert wrong["gradable"] and wrong["score"] == 0 and "should be" in wrong["tests"][0]["message"]


def test_nothing_to_grade_is_not_gradable(written: Path, tmp_path: Path) -> None:
    """No file, or the stub as handed out: `gradable` false, which costs the student no attempt."""
    for files in ({}, {"ex_pass.py": STUB}):
        results = _grade(written, tmp_path, "ex_pass", files)
        assert results["gradable"] is False and "not tried" in results["format_errors"][0], results


def test_a_crashing_submission_and_a_crashing_grader(written: Path, tmp_path: Path) -> None:
    """A file that ends the process fails gradably; a grader without Python still writes results."""
    crash = _grade(written, tmp_path, "ex_pass", {"ex_pass.py": "import os\nos._exit(0)\n"})
    assert crash["gradable"] and crash["score"] == 0 and "ended before reporting" in crash["tests"][0]["message"]
    gone = _grade(written, tmp_path, "ex_pass", {"ex_pass.py": SOLUTION}, python=str(tmp_path / "no-python"))
    assert gone["gradable"] is False and "grader failed" in gone["message"]


@pytest.mark.parametrize("root", [REPO, MINI], ids=["course", "mini_course"])
def test_each_question_outlasts_every_cap_its_grading_applies(root: Path) -> None:
    """PrairieLearn's timeout for each question is above the exercise's CPU limit and its wall-clock cap (the
    cap a loop under load, or a wait, meets) with room for start-up: a grading the course stops says so
    itself, never in PrairieLearn's generic timeout. Exercises with a wall cap of their own and one graded in
    several processes are among them."""
    found = load_course(root)
    written = prairielearn.files(found, "me/grader:1")
    for exercise in found.exercises:
        info = json.loads(written[f"questions/{exercise.name}/info.json"])
        caps = limits.budget(exercise.meta)
        timeout = info["externalGradingOptions"]["timeout"]
        assert isinstance(timeout, int) and timeout >= max(caps.cpu_s, caps.wall_s) + prairielearn.STARTUP_S, (
            exercise.name, timeout, caps)
    assert any(e.meta.wall_timeout_s for e in found.exercises)
