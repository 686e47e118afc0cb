"""`course release`: the students' copy holds everything a learner needs and no solution or hidden check."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from course.cli import app
from course.instructor.release import release
from course.registry import load_course

REPO = Path(__file__).resolve().parents[2]
COURSE_BIN = Path(sys.executable).with_name("course")


def _secret_sources(root: Path) -> dict[Path, bytes]:
    """Every file that must never reach students: solutions, wrong variants, alternatives, hidden checks."""
    found = {p: p.read_bytes() for p in (root / "solutions").rglob("*.py")}
    found.update({p: p.read_bytes() for p in root.glob("graders/*/hidden/*.py")})
    if (root / "tests" / "content" / "alternatives").is_dir():
        found.update({p: p.read_bytes() for p in (root / "tests" / "content" / "alternatives").rglob("*.py")})
    return found


def _assert_nothing_secret(out: Path, secrets: dict[Path, bytes]) -> None:
    """No file of `out` holds a secret source, whole or as its body (a solution minus its docstring)."""
    assert not (out / "solutions").exists() and not list(out.rglob("hidden"))
    bodies = {p: data.split(b'"""')[-1].strip() for p, data in secrets.items()}
    for path in (p for p in out.rglob("*") if p.is_file() and ".git" not in p.parts):
        data = path.read_bytes()
        leaked = [str(src) for src, body in bodies.items() if len(body) > 40 and body in data]
        assert not leaked, f"{path} holds {leaked}"


def test_the_real_course_releases_without_solutions(tmp_path: Path) -> None:
    """The course of this repository: stubs, public graders, docs and the package; no solution or hidden check."""
    found = load_course(REPO)
    out = tmp_path / "students"
    written = release(found, out, git=False)
    rels = {p.relative_to(out).as_posix() for p in written}
    assert {"course.toml", "README.md", "pyproject.toml", "cli/course/cli.py"} <= rels
    for exercise in found.exercises:
        assert exercise.stub_rel.as_posix() in rels and exercise.grader_path.relative_to(REPO).as_posix() in rels
    assert not any(r.startswith(("tests/", "solutions/", "benchmarks/", ".ci/")) for r in rels)
    _assert_nothing_secret(out, _secret_sources(REPO))


def test_a_student_works_through_the_release(tmp_path: Path, mini_course: Path, cli: CliRunner) -> None:
    """In the release: `course check` grades the stubs, hidden checks are gone, `course solution` says why not."""
    hidden = mini_course / "graders" / "02_ex_fail" / "hidden" / "test_ex_fail_hidden.py"
    assert hidden.is_file()
    out = tmp_path / "students"
    done = cli.invoke(app, ["release", str(out), "--course", str(mini_course)])
    assert done.exit_code == 0, done.output
    _assert_nothing_secret(out, _secret_sources(mini_course))
    assert (out / ".git").is_dir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("COURSE_")}
    checked = subprocess.run([str(COURSE_BIN), "check", "ex_fail", "--json"], cwd=out, env=env,
                             capture_output=True, text=True, timeout=120, check=False)
    assert checked.returncode == 1, checked.stdout[-3000:] + checked.stderr[-2000:]
    assert '"max_score": 3.0' in checked.stdout  # the public points only: 1 + 2, no hidden check
    shutil.copy(mini_course / "solutions" / "02_ex_fail" / "ex_fail.py", out / "exercises" / "02_ex_fail")
    checked = subprocess.run([str(COURSE_BIN), "check", "ex_fail"], cwd=out, env=env, capture_output=True,
                             text=True, timeout=120, check=False)
    assert checked.returncode == 0, checked.stdout
    shown = subprocess.run([str(COURSE_BIN), "solution", "ex_fail"], cwd=out, env=env, capture_output=True,
                           text=True, timeout=60, check=False)
    assert shown.returncode == 2 and "solutions are not part of this copy" in shown.stderr
    reset = subprocess.run([str(COURSE_BIN), "reset", "ex_fail", "--yes"], cwd=out, env=env, capture_output=True,
                           text=True, timeout=60, check=False)
    assert reset.returncode == 0, reset.stderr  # the stub comes back from the release's own commit


@pytest.mark.parametrize("where", ["nonempty", "course"])
def test_release_refuses_a_folder_in_use(tmp_path: Path, mini_course: Path, cli: CliRunner, where: str) -> None:
    """A folder that is not new, or the course's own, is a usage error."""
    out = tmp_path / "full" if where == "nonempty" else mini_course / "exercises" / "copy"
    if where == "nonempty":
        (out / "x").mkdir(parents=True)
    done = cli.invoke(app, ["release", str(out), "--course", str(mini_course)])
    assert done.exit_code == 2, done.output
