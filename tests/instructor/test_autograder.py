"""`course autograder`: Gradescope's bundle run in Gradescope's own layout, and the Classroom workflow run step by step.

Gradescope unpacks the bundle into /autograder/source, copies `run_autograder` to /autograder and
runs that copy from /autograder for each submission (its "Autograder Specifications"); these tests
rebuild that layout in a temporary root and check every results file against the documented fields.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from class_helpers import (
    MINI,
    SOLUTION,
    STUB,
    WRONG,
    assert_documented,
    assert_gradescope,
    assert_hides_hidden,
    class_course,
    write_folder,
)
from course.cli import app
from course.instructor import autograder
from course.instructor.release import release
from course.registry import load_course

REPO = Path(__file__).resolve().parents[2]
COURSE_BIN = Path(sys.executable).with_name("course")


HIDDEN_ONLY = (MINI / "solutions" / "02_ex_fail" / "wrong" / "positive_only.py").read_text(encoding="utf-8")


@pytest.fixture
def gradescope(tmp_path: Path, cli: CliRunner) -> Path:
    """Gradescope's layout, rebuilt as its image build makes it: the class course's autograder.zip unpacked
    into R/source, and `run_autograder` copied from there to R/ and made executable."""
    course = class_course(tmp_path)
    done = cli.invoke(app, ["autograder", "gradescope", "--out", str(tmp_path / "autograder.zip"),
                            "--course", str(course)])
    assert done.exit_code == 0, done.output
    root = tmp_path / "autograder"
    with zipfile.ZipFile(tmp_path / "autograder.zip") as archive:
        names = archive.namelist()
        archive.extractall(root / "source")
        modes = {i.filename: i.external_attr >> 16 for i in archive.infolist()}
    assert {"setup.sh", "run_autograder"} <= set(names) and modes["run_autograder"] & 0o111
    assert "course/graders/02_ex_fail/hidden/test_ex_fail_hidden.py" in names
    assert not any(n.startswith("course/solutions/") for n in names)
    shutil.copy(root / "source" / "run_autograder", root / "run_autograder")
    os.chmod(root / "run_autograder", 0o755)
    return root


def _submit(root: Path, files: dict[str, str], python: str = sys.executable) -> tuple[dict, str, float]:
    """One submission graded as Gradescope grades it: a fresh R/submission and R/results, the copy of
    run_autograder run from R; the results file, the stdout Gradescope keeps for instructors, the wall time."""
    for folder in ("submission", "results"):
        shutil.rmtree(root / folder, ignore_errors=True)
    write_folder(root / "submission", files)
    (root / "submission_metadata.json").write_text(json.dumps(
        {"id": 123456, "users": [{"email": "ada@example.edu", "id": 1815, "name": "Ada Lovelace"}]}), encoding="utf-8")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("COURSE_")},
           "AUTOGRADER_ROOT": str(root), "AUTOGRADER_PYTHON": python}
    started = time.monotonic()
    done = subprocess.run([str(root / "run_autograder")], cwd=root, env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    wall = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    results = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    assert_documented(results)
    return results, done.stdout, wall


def test_gradescope_grades_a_correct_submission_in_its_own_layout(gradescope: Path) -> None:
    """Full marks, the hidden check shown after publishing, the wall time, and the log on stdout only."""
    results, stdout, wall = _submit(gradescope, {"exercises/01_ex_pass/ex_pass.py": SOLUTION,
                                                 "exercises/02_ex_fail/ex_fail.py": SOLUTION})
    assert_gradescope(results, "submission")
    assert_hides_hidden(results)
    assert results["score"] == 8.0 and all(t["status"] == "passed" for t in results["tests"])
    assert [t["visibility"] for t in results["tests"]].count("after_published") == 1
    durations = [r["duration_s"] for r in results["extra_data"]["exercises"].values()]
    assert max(durations) <= results["execution_time"] <= wall  # the run's wall time, not a sum of gradings
    assert results["extra_data"]["name"] == "Ada Lovelace"
    assert "test_negative (hidden)" in stdout and "ex_fail: passed, 5/5" in stdout  # instructors see it all
    assert not (gradescope / "results" / "autograder.log").exists()


def test_gradescope_never_tells_a_hidden_verdict_in_what_students_always_see(gradescope: Path) -> None:
    """A file that fails only the hidden check: the always-visible output says what the public checks say."""
    results, _, _ = _submit(gradescope, {"ex_pass.py": SOLUTION, "nested/ex_fail.py": HIDDEN_ONLY})
    assert_gradescope(results, "submission")
    assert_hides_hidden(results)
    assert results["score"] == 6.0 and "ex_fail: passed, 3/3" in results["output"]
    hidden = [t for t in results["tests"] if t["visibility"] == "after_published"]
    assert [(t["status"], t["score"]) for t in hidden] == [("failed", 0)]


def test_gradescope_grades_a_wrong_an_empty_and_an_untouched_submission(gradescope: Path) -> None:
    """A wrong variant scores less; nothing at all, or the stubs as handed out, is not tried and scores 0."""
    wrong, _, _ = _submit(gradescope, {"ex_pass.py": SOLUTION, "nested/ex_fail.py": WRONG})
    assert_gradescope(wrong, "submission")
    assert wrong["score"] == 3.0 and "ex_fail: failed, 0/3" in wrong["output"]
    for files in ({}, {"ex_pass.py": STUB}):
        empty, _, _ = _submit(gradescope, files)
        assert_gradescope(empty, "submission")
        assert_hides_hidden(empty)
        assert empty["score"] == 0 and empty["output"].count("not tried") == 2, empty["output"]
        assert {t["max_score"] for t in empty["tests"] if t["visibility"] == "visible"} == {3.0}


def test_gradescope_grades_a_crashing_submission(gradescope: Path) -> None:
    """A file that ends the process at import and one that does not parse: each fails, in the learner's words."""
    crash = "import os\nos._exit(0)\n"
    results, stdout, _ = _submit(gradescope, {"ex_pass.py": crash, "ex_fail.py": "def double(x:\n    return x\n"})
    assert_gradescope(results, "submission")
    assert results["score"] == 0 and "ex_pass: failed, 0/3" in results["output"]
    messages = "\n".join(t["output"] for t in results["tests"])
    assert "ended before reporting" in messages and "syntax error" in messages
    assert "ex_pass: failed" in stdout


def test_a_platform_crash_still_writes_results_that_say_so(gradescope: Path) -> None:
    """No Python at all, a course that does not load, or no course where Gradescope unpacked the bundle:
    a documented results file scoring 0 that says the autograder failed, and why."""
    gone, _, _ = _submit(gradescope, {"ex_pass.py": SOLUTION}, python=str(gradescope / "no-python"))
    assert gone["score"] == 0 and "autograder failed" in gone["output"] and gone["extra_data"]["autograder_exit"]
    (gradescope / "source" / "course" / "course.toml").write_text("exercises = [", encoding="utf-8")
    broken, _, _ = _submit(gradescope, {"ex_pass.py": SOLUTION})
    assert broken["score"] == 0 and "RegistryError" in broken["output"] and broken["tests"] == []
    (gradescope / "source" / "course" / "course.toml").unlink()
    missing, stdout, _ = _submit(gradescope, {"ex_pass.py": SOLUTION})
    assert "holds no course.toml" in missing["output"] and "every exercise in course.toml" not in missing["output"]
    assert "Traceback" in stdout


def test_the_real_course_bundle_installs_the_pinned_jax() -> None:
    """The bundle carries pyproject.toml (with the JAX pin) and the package; setup.sh installs them."""
    files = autograder.bundle_files(load_course(REPO))
    assert b'"jax==0.10.2"' in files["course/pyproject.toml"] and "course/cli/course/cli.py" in files
    assert b'pip install --quiet "$HERE/course"' in files["setup.sh"]
    assert not any(name.startswith(("course/solutions/", "course/tests/")) for name in files)


def test_the_classroom_workflow_runs_each_step_locally(tmp_path: Path, cli: CliRunner) -> None:
    """Parse the workflow; each graded step's command passes on the solutions and fails on the stubs."""
    course = class_course(tmp_path)
    repo = tmp_path / "repo"
    release(load_course(course), repo, git=False)
    done = cli.invoke(app, ["autograder", "classroom", "--out", str(repo), "--course", str(course)])
    assert done.exit_code == 0, done.output
    workflow = yaml.safe_load((repo / ".github" / "workflows" / "classroom.yml").read_text(encoding="utf-8"))
    steps = workflow["jobs"]["run-autograding-tests"]["steps"]
    graded = [s for s in steps if s.get("uses", "").startswith("classroom-resources/autograding-command-grader")]
    assert [s["with"]["max-score"] for s in graded] == [3, 3]  # public points only
    reporter = steps[-1]
    assert reporter["with"]["runners"] == ",".join(s["id"] for s in graded)
    assert set(reporter["env"]) == {f"{s['id'].upper()}_RESULTS" for s in graded}
    env = {k: v for k, v in os.environ.items() if not k.startswith("COURSE_")}
    env["PATH"] = f"{COURSE_BIN.parent}{os.pathsep}{env['PATH']}"

    said: list[str] = []

    def run(step: dict) -> int:
        """The step's setup and command, in the repository, as the command grader runs them."""
        for command in (step["with"]["setup-command"], step["with"]["command"]):
            if command:
                done = subprocess.run(command, shell=True, cwd=repo, env=env, capture_output=True, text=True,
                                      timeout=step["with"]["timeout"] * 60, check=False)
                said.append(done.stdout + done.stderr)
                if done.returncode:
                    return done.returncode
        return 0

    assert [run(s) for s in graded] == [1, 1], said  # both stubs fail
    for exercise in load_course(course).exercises:
        shutil.copy(exercise.solution_path, repo / exercise.stub_rel)
    assert [run(s) for s in graded] == [0, 0], said
