"""`course autograder`: Gradescope's bundle run in Gradescope's own layout, and the Classroom workflow run step by step.

Gradescope unpacks the bundle into /autograder/source, copies `run_autograder` to /autograder and
runs that copy from /autograder for each submission (its "Autograder Specifications"); these tests
rebuild that layout in a temporary root and check every results file against the documented fields.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import psutil
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
from course.engine.contain.limits import Deadline
from course.engine.parent import runner
from course.instructor import autograder, budget
from course.instructor.release import release
from course.registry import load_course
from support import FIXTURES

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


LOOP = "def double(x):\n    while True:\n        pass\n"
SLEEPS = "import time\n\n\ndef double(x):\n    while True:\n        time.sleep(1)\n"


def _environment(root: Path, python: str = sys.executable, **extra: str) -> dict[str, str]:
    """run_autograder's environment: Gradescope's root at `root`, this Python, nothing of the caller's course."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith("COURSE_")},
            "AUTOGRADER_ROOT": str(root), "AUTOGRADER_PYTHON": python, **extra}


def _fresh(root: Path, files: dict[str, str]) -> None:
    """A fresh R/submission holding `files`, no R/results, and Gradescope's submission metadata."""
    for folder in ("submission", "results"):
        shutil.rmtree(root / folder, ignore_errors=True)
    write_folder(root / "submission", files)
    (root / "submission_metadata.json").write_text(json.dumps(
        {"id": 123456, "users": [{"email": "ada@example.edu", "id": 1815, "name": "Ada Lovelace"}]}), encoding="utf-8")


def _submit(root: Path, files: dict[str, str], python: str = sys.executable,
            **extra: str) -> tuple[dict, str, float]:
    """One submission graded as Gradescope grades it: a fresh R/submission and R/results, the copy of
    run_autograder run from R; the results file, the stdout Gradescope keeps for instructors, the wall time."""
    _fresh(root, files)
    env = _environment(root, python, **extra)
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


def test_a_run_keeps_within_its_budget_and_says_which_checks_it_stopped(gradescope: Path) -> None:
    """Both exercises loop forever and the run's budget is far below their own limits (20 s of CPU each):
    each is stopped when its share of the budget is spent, scores nothing, and says the budget ran out."""
    results, stdout, _ = _submit(gradescope, {"ex_pass.py": LOOP, "ex_fail.py": LOOP}, AUTOGRADER_BUDGET_S="6")
    assert_gradescope(results, "submission")
    assert_hides_hidden(results)
    assert results["score"] == 0 and "not_graded" not in results["extra_data"], results["output"]
    for name, rec in results["extra_data"]["exercises"].items():
        assert rec["status"] == "failed" and budget.STOPPED in rec["message"], (name, rec)
        stopped = [c for c in rec["checks"] if budget.STOPPED in c["message"]]
        assert len(stopped) <= 1 and all(c["status"] != "passed" for c in rec["checks"]), rec["checks"]
    tests = [t for t in results["tests"] if t["visibility"] == "visible"]
    assert any(budget.STOPPED in t["output"] for t in tests if t["tags"][0] == "ex_pass")
    assert "within 6 s" in stdout and "a budget of 6 s" in stdout


@pytest.mark.parametrize("exercises", [1, 2, 25])
def test_every_exercise_is_promised_its_share_and_the_last_ends_with_the_budget(exercises: int) -> None:
    """Deadlines come in the order exercises are graded, each at least its promised share after the one
    before, and the last at the budget's end: a run stopped at every deadline still grades them all."""
    clock = budget.Budget(480, started=1000.0)
    deadlines = [clock.deadline(exercises - i - 1, exercises).at for i in range(exercises)]
    assert deadlines[-1] == clock.end == 1480.0
    gaps = [b - a for a, b in zip([clock.started, *deadlines], deadlines, strict=False)]
    assert all(gap >= clock.promise(exercises) - 1e-9 for gap in gaps), gaps
    assert clock.promise(exercises) * exercises == pytest.approx(480 * budget.PROMISED)


def test_an_exercise_graded_in_several_processes_is_stopped_at_its_deadline_too(tmp_path: Path) -> None:
    """Both processes of a cohort loop forever; the deadline, far before their own limits (20 s of CPU each),
    stops them and the result says the budget ran out, with no check passed after it."""
    exercise = load_course(FIXTURES / "multi_course").get("mp_pass")
    loops = tmp_path / "mp_pass.py"
    loops.write_text("def total(value):\n    while True:\n        pass\n", encoding="utf-8")
    result = runner.grade(exercise, loops, seed=1, hidden=True, deadline=Deadline(time.monotonic() + 5, budget.STOPPED))
    said = [result.message, *(c.message for c in result.checks)]
    assert result.status == "failed" and any(budget.STOPPED in text for text in said), said
    assert result.score < exercise.max_score


def test_a_run_stopped_midway_keeps_what_it_graded(gradescope: Path) -> None:
    """Gradescope kills the container midway (here: SIGKILL to every process of the run once the first
    exercise is graded, the second sleeping forever): results.json holds the first exercise's grades,
    says the second was not graded, has Gradescope's shape, and others may read it; the log on stdout
    has the first exercise's checks."""
    _fresh(gradescope, {"ex_pass.py": SOLUTION, "ex_fail.py": SLEEPS})
    results = gradescope / "results" / "results.json"
    log = gradescope / "stdout.txt"
    scratch = gradescope.parent / "tmp"  # the killed run's scratch folders stay there, as in a killed container
    scratch.mkdir()
    with log.open("wb") as sink:
        proc = subprocess.Popen([str(gradescope / "run_autograder")], cwd=gradescope,
                                env=_environment(gradescope, TMPDIR=str(scratch)),
                                stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        seen = _wait_for(results, lambda data: data["extra_data"]["exercises"]["ex_pass"]["status"] != "error")
        assert seen["extra_data"]["not_graded"] == ["ex_fail"]
    finally:
        family = psutil.Process(proc.pid).children(recursive=True)
        os.killpg(proc.pid, signal.SIGKILL)
        for child in family:
            with contextlib.suppress(psutil.Error):
                child.kill()
        proc.wait()
    data = json.loads(results.read_text(encoding="utf-8"))
    assert_gradescope(data, "submission")
    assert_hides_hidden(data)
    records = data["extra_data"]["exercises"]
    assert records["ex_pass"]["status"] == "passed" and data["score"] == 3.0
    assert records["ex_fail"]["status"] == "error" and records["ex_fail"]["message"] == autograder.NOT_GRADED
    assert data["extra_data"]["not_graded"] == ["ex_fail"] and "Not graded: ex_fail." in data["output"]
    assert "ex_pass: passed, 3/3" in data["output"]
    umask = os.umask(0)
    os.umask(umask)
    assert results.stat().st_mode & 0o777 == 0o666 & ~umask
    assert not list(results.parent.glob(".results.json.*"))  # no half-written file left beside it
    said = log.read_text(encoding="utf-8")  # the log Gradescope keeps for instructors, as far as it got
    assert "ex_pass: passed, 3/3" in said and "test_zero" in said and "ex_fail:" not in said, said


def _wait_for(path: Path, ready: Callable[[dict], bool]) -> dict:
    """The results file once `ready` says so (read whole each time: it is only ever replaced whole)."""
    for _ in range(6000):  # at most 10 minutes, for a machine far busier than any CI
        with contextlib.suppress(OSError, ValueError):
            data = json.loads(path.read_text(encoding="utf-8"))
            if ready(data):
                return data
        time.sleep(0.1)
    raise AssertionError(f"{path} never showed the first exercise graded")


def test_the_bundle_knows_its_budget(gradescope: Path, tmp_path: Path, cli: CliRunner) -> None:
    """`--budget` (by default, two minutes under Gradescope's default timeout) is written into run_autograder;
    the command says what to set on Gradescope, and refuses a budget no timeout could hold."""
    default = (gradescope / "run_autograder").read_text(encoding="utf-8")
    assert f'BUDGET="${{AUTOGRADER_BUDGET_S:-{budget.DEFAULT_BUDGET_S}}}"' in default
    course = tmp_path / "course"  # the fixture's
    done = cli.invoke(app, ["autograder", "gradescope", "--out", str(tmp_path / "a.zip"), "--course", str(course),
                            "--budget", "300"])
    assert done.exit_code == 0, done.output
    with zipfile.ZipFile(tmp_path / "a.zip") as archive:
        script = archive.read("run_autograder").decode()
    assert 'BUDGET="${AUTOGRADER_BUDGET_S:-300}"' in script and '--budget "$BUDGET"' in script
    said = " ".join(done.output.split())
    assert "timeout" in said and "10 minutes" in said and "0.5 CPU" in said and "768 MiB" in said
    assert "300 s" in said
    refused = cli.invoke(app, ["autograder", "gradescope", "--out", str(tmp_path / "b.zip"), "--course", str(course),
                               "--budget", "2400"])
    assert refused.exit_code != 0 and "budget" in refused.output and not (tmp_path / "b.zip").exists()


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
