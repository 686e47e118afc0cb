"""Any machine is an ordinary place to learn: a course imported through `PYTHONPATH` grades as an installed one, and an
exercise that cannot get what it needs from the operating system fails alone, in one sentence, while the rest of
`course check --all` is graded.

Both are set up for real: the course installed with `pip install --target` and run by a bare interpreter whose only
packages come from `PYTHONPATH` (as on an HPC module, or an accelerator machine's own JAX); and a machine with no TCP
socket at all (an accelerator's gVisor sandbox, which answers EAFNOSUPPORT) made by a seccomp filter that every
process of the run inherits.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jax
import pytest

from support import FIXTURES

REPO = Path(__file__).resolve().parents[1]
MINI = FIXTURES / "mini_course"
MULTI = FIXTURES / "multi_course"
EX_PASS = (MINI / "solutions" / "01_ex_pass" / "ex_pass.py").read_text(encoding="utf-8")
MP_PASS = (MULTI / "solutions" / "01_mp_pass" / "mp_pass.py").read_text(encoding="utf-8")

pytestmark = pytest.mark.slow


def _course(root: Path) -> Path:
    """A course of `ex_pass` (one process) and `mp_pass` (two processes meeting over TCP), both solved in place."""
    found = root / "course"
    for top in ("exercises", "graders", "solutions"):
        shutil.copytree(MINI / top / "01_ex_pass", found / top / "01_ex_pass")
        shutil.copytree(MULTI / top / "01_mp_pass", found / top / "02_mp_pass")
    (found / "course.toml").write_text('format_version = 1\ntitle = "Machines"\nexercises = ["ex_pass", "mp_pass"]\n',
                                       encoding="utf-8")
    (found / "exercises" / "01_ex_pass" / "ex_pass.py").write_text(EX_PASS, encoding="utf-8")
    (found / "exercises" / "02_mp_pass" / "mp_pass.py").write_text(MP_PASS, encoding="utf-8")
    return found


def _env(**extra: str) -> dict[str, str]:
    """This environment without the caller's course settings or Python paths."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("COURSE_", "PYTHON"))}
    return {**keep, "COURSE_NO_PROGRESS": "1", **extra}


def _checked(done: subprocess.CompletedProcess[str]) -> dict[str, dict]:
    """Each exercise of a `course check --json` run, by name."""
    report = json.loads(done.stdout)
    return {e["name"]: e for e in report["exercises"]}


NO_INET = ("import errno, os, socket, sys\n"
           "from course.engine.contain import contain\n"
           "contain.no_new_privileges()\n"
           "contain.refuse_sockets(socket.AF_INET, errno.EAFNOSUPPORT)\n"
           "contain.refuse_sockets(socket.AF_INET6, errno.EAFNOSUPPORT)\n"
           "os.execv(sys.executable, [sys.executable, '-m', 'course', *sys.argv[1:]])\n")
"""`course` on a machine that has no TCP sockets: every process it starts inherits the filter."""


@pytest.mark.skipif(not sys.platform.startswith("linux") or os.environ.get("COURSE_PORTABLE") == "1",
                    reason="seccomp is Linux's")
def test_an_exercise_the_machine_cannot_grade_fails_alone(tmp_path: Path) -> None:
    """With no TCP socket to be had, `check --all` grades `ex_pass` as usual and gives `mp_pass` one sentence, an
    error of the platform (exit 3), never the learner's failure and never the end of the run."""
    found = _course(tmp_path)
    probe = subprocess.run([sys.executable, "-c", NO_INET.replace("os.execv", "socket.socket(); os.execv")],
                           capture_output=True, text=True, env=_env(), check=False)
    assert f"[Errno {errno.EAFNOSUPPORT}]" in probe.stderr, probe.stderr  # the filter does refuse a TCP socket
    done = subprocess.run([sys.executable, "-c", NO_INET, "check", "--all", "--json", "--course", str(found)],
                          cwd=found, capture_output=True, text=True, env=_env(), timeout=600, check=False)
    checked = _checked(done)
    assert done.returncode == 3, done.stderr[-2000:]
    assert checked["ex_pass"]["status"] == "passed", checked["ex_pass"]
    message = checked["mp_pass"]["message"]
    assert checked["mp_pass"]["status"] == "error" and "Address family not supported" in message, message
    assert "no TCP socket" in message and "no mistake of your code" in message and "\n" not in message
    assert "course itself failed" not in done.stderr and "reinstall" not in done.stdout + done.stderr


def test_a_course_imported_through_pythonpath_grades(tmp_path: Path) -> None:
    """`pip install --target DIR` of the course, run by an interpreter with no packages of its own and `PYTHONPATH`
    naming DIR and JAX's folder: `course check` grades (cold, and two exercises through the warm worker), and so
    does `course grade` inside its sandbox, which must let every grading read those folders."""
    target = tmp_path / "target"
    pip = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target),
                          str(REPO)], capture_output=True, text=True, timeout=600, check=False)
    assert pip.returncode == 0, pip.stderr[-2000:]
    bare = tmp_path / "bare"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(bare)], check=True, timeout=120)
    python = str(bare / "bin" / "python")
    env = _env(PYTHONPATH=os.pathsep.join([str(target), str(Path(jax.__file__).resolve().parents[1])]))
    where = subprocess.run([python, "-c", "import course; print(course.__file__)"], capture_output=True, text=True,
                           env=env, check=True)
    assert where.stdout.startswith(str(target)), where.stdout  # the course comes from DIR, not an editable install
    found = _course(tmp_path)
    for names in (["ex_pass"], ["ex_pass", "mp_pass"]):
        done = subprocess.run([python, "-m", "course", "check", *names, "--json", "--course", str(found)], cwd=found,
                              capture_output=True, text=True, env=env, timeout=600, check=False)
        checked = _checked(done)
        assert done.returncode == 0, [(e["name"], e["message"]) for e in checked.values()]
        assert all(e["status"] == "passed" for e in checked.values()) and len(checked) == len(names)
    (tmp_path / "subs" / "s1").mkdir(parents=True)
    (tmp_path / "subs" / "s1" / "ex_pass.py").write_text(EX_PASS, encoding="utf-8")
    # pytest's own temporary folder is root's alone: no unprivileged user could read DIR, so root must say to trust.
    done = subprocess.run([python, "-m", "course", "grade", "subs", "--out", "out", "--course", str(found),
                           "--trust-submissions"],
                          cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600, check=False)
    results = json.loads((tmp_path / "out" / "s1" / "results.json").read_text(encoding="utf-8"))
    assert done.returncode == 0, results["extra_data"]["exercises"]["ex_pass"]["message"]
    assert results["extra_data"]["exercises"]["ex_pass"]["status"] == "passed"
