"""Who the boundary is: where nothing but the learner's own rights confines their code, the tools say so.

`course check` runs the learner's code with the learner's rights (docs/security.md): it is not a sandbox.
Run as root, or on a machine that gives it no namespace, it says so once, in one line, before grading.
`course grade` runs strangers' code: where it would run it as root (no unprivileged user can run its
Python), it refuses to grade the class unless the instructor says `--trust-submissions`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from course.engine.contain import protections

HERE = Path(__file__).parent
COURSE_DIR = HERE / "course"
ATTACK = HERE / "attacks" / "write_home.py"
COURSE_BIN = Path(sys.executable).with_name("course")
NOTICE = "your code runs "


def _env(home: Path, **extra: str) -> dict[str, str]:
    """A learner's or instructor's environment: no course settings inherited, `home` as the home folder."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith("COURSE_")}, "HOME": str(home), **extra}


def _check(tmp_path: Path, **extra: str) -> tuple[subprocess.CompletedProcess[str], dict, Path, str]:
    """`course check double --json` of the attack in a fresh workspace, with a home folder of its own."""
    token = uuid.uuid4().hex
    home, workspace = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    stub = workspace / "exercises" / "01_double" / "double.py"
    stub.parent.mkdir(parents=True)
    stub.write_text(ATTACK.read_text(encoding="utf-8").replace("__TOKEN__", token), encoding="utf-8")
    done = subprocess.run([str(COURSE_BIN), "check", "double", "--json", "--workspace", str(workspace), "--course",
                           str(COURSE_DIR)], capture_output=True, text=True, timeout=600, env=_env(home, **extra),
                          check=False)
    assert done.stdout.strip(), done.stderr[-2000:]
    return done, json.loads(done.stdout)["exercises"][0], home, token


@pytest.mark.parametrize("portable", [False, True], ids=["this machine", "no namespace (COURSE_PORTABLE=1)"])
def test_check_says_once_that_the_code_runs_with_the_learners_rights(tmp_path: Path, portable: bool) -> None:
    """The file writes into the home folder and scores what its values deserve (2 of 2): `check` is not a
    boundary. Where it runs as root, or with no namespace, stderr says so once, in one line; where the learner
    is an ordinary user in a namespace, nothing is said."""
    done, result, home, token = _check(tmp_path, **({"COURSE_PORTABLE": "1"} if portable else {}))
    assert (done.returncode, result["status"], result["score"], result["max_score"]) == (0, "passed", 2.0, 2.0)
    assert (home / f"planted-{token}").is_file()  # the learner's code had the learner's rights
    said = [line for line in done.stderr.splitlines() if NOTICE in line]
    should = portable or os.geteuid() == 0 or not protections.available().pid_namespace
    assert len(said) == (1 if should else 0), done.stderr
    if os.geteuid() == 0:
        assert "as root" in said[0], said


def _class(tmp_path: Path) -> Path:
    """A class of two: the attack and the reference solution."""
    subs = tmp_path / "subs"
    for student, source in (("mallory", ATTACK), ("ada", HERE / "attacks" / "solution.py")):
        (subs / student).mkdir(parents=True)
        text = source.read_text(encoding="utf-8").replace("__TOKEN__", uuid.uuid4().hex)
        (subs / student / "double.py").write_text(text, encoding="utf-8")
    return subs


def test_grade_refuses_to_run_a_class_as_root_unless_trusted(tmp_path: Path) -> None:
    """Where `course grade` would run submitted code as root (no unprivileged user can run its Python), it
    grades nothing and says how to go on (exit 2); told `--trust-submissions`, it grades, and each student
    gets the score their file deserves (2 of 2 for both). Where an unprivileged user is there, or `course` is
    not root, it grades without being told."""
    subs, home = _class(tmp_path), tmp_path / "home"
    home.mkdir()
    argv = [str(COURSE_BIN), "grade", str(subs), "--course", str(COURSE_DIR), "--only", "double", "--json"]
    refused = subprocess.run([*argv, "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=600,
                             env=_env(home), check=False)
    as_root = protections.grades_as_root(protections.available())
    if as_root:
        assert refused.returncode == 2 and "--trust-submissions" in refused.stderr, refused.stderr
        assert not (tmp_path / "out").exists() and not list(home.glob("planted-*"))  # nothing read, nothing run
    else:
        assert refused.returncode == 0, refused.stderr
    trusted = subprocess.run([*argv, "--out", str(tmp_path / "trusted"), "--trust-submissions"],
                             capture_output=True, text=True, timeout=600, env=_env(home), check=False)
    assert trusted.returncode == 0, trusted.stderr
    assert json.loads(trusted.stdout)["totals"] == {"ada": 2.0, "mallory": 2.0}
    results = json.loads((tmp_path / "trusted" / "mallory" / "results.json").read_text(encoding="utf-8"))
    assert results["extra_data"]["isolation"]["unprivileged_user"] is (not as_root and os.geteuid() == 0)
    if results["extra_data"]["isolation"]["private_folders"]:  # the sandbox hid the instructor's home folder
        assert not list(home.glob("planted-*"))


@pytest.mark.parametrize(("euid", "user", "refused"), [(0, None, True), (0, (65534, 65534), False),
                                                       (1000, None, False)])
def test_grading_as_root_means_root_with_no_one_to_grade_as(monkeypatch: pytest.MonkeyPatch, euid: int,
                                                            user: tuple[int, int] | None, refused: bool) -> None:
    """Only root with no unprivileged user runs submitted code as root: an ordinary user grades as itself."""
    monkeypatch.setattr(os, "geteuid", lambda: euid)
    assert protections.grades_as_root(protections.Protections(user=user)) is refused
