"""`course autograder`: Gradescope's bundle run on a temporary root, and the Classroom workflow run step by step."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from class_helpers import SOLUTION, WRONG, assert_gradescope, class_course, write_folder
from course.cli import app
from course.instructor import autograder
from course.instructor.release import release
from course.registry import load_course

REPO = Path(__file__).resolve().parents[2]
COURSE_BIN = Path(sys.executable).with_name("course")


@pytest.fixture
def bundle(tmp_path: Path, cli: CliRunner) -> Path:
    """The class course's autograder.zip, unpacked as Gradescope unpacks it into /autograder/source."""
    course = class_course(tmp_path)
    done = cli.invoke(app, ["autograder", "gradescope", "--out", str(tmp_path / "autograder.zip"),
                            "--course", str(course)])
    assert done.exit_code == 0, done.output
    with zipfile.ZipFile(tmp_path / "autograder.zip") as archive:
        names = archive.namelist()
        archive.extractall(tmp_path / "source")
        modes = {i.filename: i.external_attr >> 16 for i in archive.infolist()}
    assert {"setup.sh", "run_autograder"} <= set(names) and modes["run_autograder"] & 0o111
    assert "course/graders/02_ex_fail/hidden/test_ex_fail_hidden.py" in names
    assert not any(n.startswith("course/solutions/") for n in names)
    for script in ("setup.sh", "run_autograder"):
        os.chmod(tmp_path / "source" / script, 0o755)
    return tmp_path / "source"


def _run(bundle: Path, root: Path, files: dict[str, str], python: str = sys.executable) -> dict:
    """Run the bundle's run_autograder on a temporary AUTOGRADER_ROOT holding `files`; its results.json."""
    write_folder(root / "submission", files)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("COURSE_")},
           "AUTOGRADER_ROOT": str(root), "AUTOGRADER_PYTHON": python}
    done = subprocess.run([str(bundle / "run_autograder")], env=env, capture_output=True, text=True, timeout=180,
                          check=False)
    assert done.returncode == 0, done.stderr
    return json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))


def test_run_autograder_grades_correct_wrong_and_empty_submissions(bundle: Path, tmp_path: Path) -> None:
    """A solution scores everything (hidden checks after publishing), a wrong variant less, nothing 0."""
    correct = _run(bundle, tmp_path / "a", {"exercises/01_ex_pass/ex_pass.py": SOLUTION,
                                            "exercises/02_ex_fail/ex_fail.py": SOLUTION})
    assert_gradescope(correct, "submission")
    assert correct["score"] == 8.0 and all(t["status"] == "passed" for t in correct["tests"])
    assert [t["visibility"] for t in correct["tests"]].count("after_published") == 1
    wrong = _run(bundle, tmp_path / "b", {"ex_pass.py": SOLUTION, "nested/ex_fail.py": WRONG})
    assert_gradescope(wrong, "submission")
    assert wrong["score"] == 3.0 and "ex_fail: failed" in wrong["output"]
    empty = _run(bundle, tmp_path / "c", {})
    assert_gradescope(empty, "submission")
    assert empty["score"] == 0 and "not tried" in empty["output"]


def test_a_crash_still_writes_results_that_say_so(bundle: Path, tmp_path: Path) -> None:
    """No Python at all, or a broken course: a results file scoring 0 that says the autograder failed."""
    gone = _run(bundle, tmp_path / "a", {"ex_pass.py": SOLUTION}, python=str(tmp_path / "no-python"))
    assert gone["score"] == 0 and "autograder failed" in gone["output"] and gone["extra_data"]["autograder_exit"]
    (bundle / "course" / "course.toml").write_text("exercises = [", encoding="utf-8")
    broken = _run(bundle, tmp_path / "b", {"ex_pass.py": SOLUTION})
    assert broken["score"] == 0 and "RegistryError" in broken["output"] and broken["tests"] == []


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

    assert [run(s) for s in graded] == [0, 1], said  # the ex_pass stub is already right; the ex_fail stub fails
    for exercise in load_course(course).exercises:
        shutil.copy(exercise.solution_path, repo / exercise.stub_rel)
    assert [run(s) for s in graded] == [0, 0], said
