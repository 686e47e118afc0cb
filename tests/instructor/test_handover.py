"""A root process hands the grading to an unprivileged user (Gradescope's and PrairieLearn's containers, `course grade`
as root with a system Python): every exercise is gradable there, one graded in several processes too.

Such a grading runs as `course-grader` (or `nobody`) only where that user can run the Python it is given; this
machine's own interpreter may lie under root's home, so these tests give the system's Python the course and its
packages through `PYTHONPATH`, as an HPC module or a `pip install --target` would, and run each platform's own
entry point with it: `course grade`, Gradescope's `run_autograder` in its layout, PrairieLearn's `run.sh`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import jax
import pytest

import course
from class_helpers import MINI, SOLUTION, assert_documented, write_folder
from support import FIXTURES

SYSTEM_PYTHON = Path("/usr/bin/python3")
MULTI = FIXTURES / "multi_course"
MP_SOLUTION = (MULTI / "solutions" / "01_mp_pass" / "mp_pass.py").read_text(encoding="utf-8")
MP_STUB = (MULTI / "exercises" / "01_mp_pass" / "mp_pass.py").read_text(encoding="utf-8")


def _system_python() -> str:
    """Why the system's Python cannot stand in here ('' when it can): these tests need root and the same Python."""
    if os.geteuid() != 0:
        return "only a root process hands a grading to a user of its own"
    if not SYSTEM_PYTHON.exists():
        return "no system Python at /usr/bin/python3"
    done = subprocess.run([str(SYSTEM_PYTHON), "-c", "import sys; print(sys.version_info[:2])"], capture_output=True,
                          text=True, check=False)
    if done.stdout.strip() != str(sys.version_info[:2]):
        return f"the system's Python is not {sys.version_info[0]}.{sys.version_info[1]}, whose packages these are"
    return ""


pytestmark = [pytest.mark.slow, pytest.mark.skipif(bool(_system_python()), reason=_system_python() or "-")]


@pytest.fixture(scope="module")
def system_env() -> dict[str, str]:
    """The environment that runs `course` on the system's Python: its packages and `course` itself on PYTHONPATH.
    Skips where the user gradings become cannot read them (then they stay root, and nothing is handed over)."""
    packages = str(Path(jax.__file__).resolve().parents[1])
    source = str(Path(course.__file__).resolve().parents[1])
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("COURSE_", "PYTHON"))},
           "PYTHONPATH": os.pathsep.join([source, packages])}
    probe = "from course.engine.contain import protections; print(protections.available().user is not None)"
    done = subprocess.run([str(SYSTEM_PYTHON), "-c", probe], capture_output=True, text=True, env=env, check=False,
                          timeout=120)
    if done.stdout.strip() != "True":
        pytest.skip(f"the unprivileged user cannot run the system's Python with this course ({done.stderr[-300:]})")
    return env


def _course(root: Path) -> Path:
    """A course of `ex_pass` (one process) and `mp_pass` (two processes that add their values with JAX)."""
    found = root / "course"
    for top in ("exercises", "graders", "solutions"):
        shutil.copytree(MINI / top / "01_ex_pass", found / top / "01_ex_pass")
        shutil.copytree(MULTI / top / "01_mp_pass", found / top / "02_mp_pass")
    (found / "exercises" / "01_ex_pass" / "ex_pass.py").write_text(
        'def double(x):\n    """Return twice x."""\n    raise NotImplementedError("double")\n', encoding="utf-8")
    (found / "course.toml").write_text('format_version = 1\ntitle = "Handed-over course"\n'
                                       'exercises = ["ex_pass", "mp_pass"]\n', encoding="utf-8")
    return found


def _run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """`args` run to its end (a hang guard of 10 minutes, never a measure of speed)."""
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False)


def test_course_grade_as_root_grades_a_multi_process_exercise(tmp_path: Path, system_env: dict[str, str]) -> None:
    """`course grade` as root with the system's Python: the two-process exercise is graded as the unprivileged user,
    full marks, exit 0; a regrade too."""
    found = _course(tmp_path)
    write_folder(tmp_path / "subs" / "s1", {"ex_pass.py": SOLUTION, "mp_pass.py": MP_SOLUTION})
    for extra in ([], ["--regrade"]):
        done = _run([str(SYSTEM_PYTHON), "-m", "course", "grade", "subs", "--out", "out", "--course", str(found),
                     *extra], system_env, tmp_path)
        results = json.loads((tmp_path / "out" / "s1" / "results.json").read_text(encoding="utf-8"))
        records = results["extra_data"]["exercises"]
        assert done.returncode == 0, (done.stderr[-2000:], records["mp_pass"]["message"])
        assert records["mp_pass"]["status"] == "passed" and results["score"] == 6.0, records["mp_pass"]
        assert results["extra_data"]["isolation"]["unprivileged_user"] is True


def test_gradescope_grades_a_multi_process_exercise_as_its_user(tmp_path: Path, system_env: dict[str, str]) -> None:
    """Gradescope's bundle, run as root in its layout with the system's Python: full marks for both exercises, the
    two-process one included, graded as the unprivileged user; nothing tells the student to reinstall anything."""
    found = _course(tmp_path)
    done = _run([str(SYSTEM_PYTHON), "-m", "course", "autograder", "gradescope", "--out", "autograder.zip",
                 "--course", str(found)], system_env, tmp_path)
    assert done.returncode == 0, done.stderr
    root = tmp_path / "autograder"
    with zipfile.ZipFile(tmp_path / "autograder.zip") as archive:
        archive.extractall(root / "source")
    shutil.copy(root / "source" / "run_autograder", root / "run_autograder")
    os.chmod(root / "run_autograder", 0o755)
    write_folder(root / "submission", {"ex_pass.py": SOLUTION, "mp_pass.py": MP_SOLUTION})
    (root / "submission_metadata.json").write_text(json.dumps({"users": [{"name": "Ada Lovelace"}]}), encoding="utf-8")
    env = {**system_env, "AUTOGRADER_ROOT": str(root), "AUTOGRADER_PYTHON": str(SYSTEM_PYTHON)}
    done = _run([str(root / "run_autograder")], env, root)
    results = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    assert_documented(results)
    records = results["extra_data"]["exercises"]
    assert records["mp_pass"]["status"] == "passed", (records["mp_pass"]["message"], done.stdout[-2000:])
    assert results["score"] == 6.0 and results["extra_data"]["isolation"]["unprivileged_user"] is True
    assert "reinstall" not in json.dumps(results)


def test_prairielearn_grades_a_multi_process_question_as_its_user(tmp_path: Path, system_env: dict[str, str]) -> None:
    """PrairieLearn's external grader, run as root in its `/grade` layout with the system's Python: the two-process
    question is gradable, and a correct file scores 1."""
    found = _course(tmp_path)
    done = _run([str(SYSTEM_PYTHON), "-m", "course", "autograder", "prairielearn", "--out", "pl", "--image", "me/g:1",
                 "--course", str(found)], system_env, tmp_path)
    assert done.returncode == 0, done.stderr
    written = tmp_path / "pl"
    options = json.loads((written / "questions" / "mp_pass" / "info.json").read_text(encoding="utf-8"))
    options = options["externalGradingOptions"]
    root = tmp_path / "grade"
    for entry in options["serverFilesCourse"]:
        shutil.copytree(written / "serverFilesCourse" / entry, root / "serverFilesCourse" / entry)
    write_folder(root / "student", {"mp_pass.py": MP_SOLUTION})
    write_folder(root / "data", {"data.json": json.dumps({"params": {}, "submitted_answers": {}})})
    entrypoint = root / options["entrypoint"].removeprefix("/grade/")
    os.chmod(entrypoint, 0o755)
    env = {**system_env, **options["environment"], "GRADE_ROOT": str(root), "GRADER_PYTHON": str(SYSTEM_PYTHON)}
    done = _run([str(entrypoint)], env, root)
    results = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    assert results.get("gradable", True) is True and results["score"] == 1.0, (results, done.stdout[-2000:])
