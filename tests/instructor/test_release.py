"""`course release`: the students' copy holds everything a learner needs and no solution or hidden check."""

from __future__ import annotations

import os
import re
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


def test_the_release_readme_is_written_for_students(tmp_path: Path) -> None:
    """Set-up, the learner's tour and the notebook workflow; no instructor tour, test line or developer notes;
    no instructor docs; every link it keeps leads to a file of the release."""
    out = tmp_path / "students"
    written = release(load_course(REPO), out, git=False)
    readme = (out / "README.md").read_text(encoding="utf-8")
    assert "## Set up" in readme and "## A learner's tour" in readme and "%load_ext course" in readme
    assert "pip install -e .\n" in readme and "$ course check" in readme
    for absent in ("instructor", "pytest", "[test]", "For developers", "course validate", "course grade"):
        assert absent.lower() not in readme.lower(), absent
    rels = {p.relative_to(out).as_posix() for p in written}
    assert not rels & {"docs/authoring.md", "docs/grading.md", "docs/security.md"}
    for target in re.findall(r"\]\(([^)#]+)", readme):
        assert "://" in target or (out / target).exists(), target


def _readme_commands(readme: str) -> list[str]:
    """The commands of the README's console blocks, in order."""
    blocks = re.findall(r"```console\n(.*?)```", readme, re.DOTALL)
    return [line[2:].strip() for block in blocks for line in block.splitlines() if line.startswith("$ ")]


def _reuse_installed(venv: Path) -> None:
    """Let a fresh virtual environment see this one's packages (JAX and the rest, but not `course`), so
    `pip install -e .` finds its requirements installed instead of downloading them."""
    site = next(Path(sys.prefix, "lib").glob("python3*/site-packages"))
    deps = venv.parent / ".deps"
    deps.mkdir()
    for entry in site.iterdir():
        if not re.match(r"(__editable__[._]*)?course|_?course[-_.]", entry.name) and entry.name != "__pycache__":
            (deps / entry.name).symlink_to(entry)
    target = next(venv.glob("lib/python3*/site-packages"))
    (target / "zz_reused.pth").write_text(f"{deps}\n", encoding="utf-8")


MY_KERNEL = """\
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def add_one(x_ref, o_ref):
    o_ref[...] = x_ref[...] + 1


x = jnp.arange(4, dtype=jnp.float32)
print(pl.pallas_call(add_one, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x))
"""


@pytest.mark.slow
def test_a_student_follows_the_release_readme_in_a_fresh_venv(tmp_path: Path) -> None:
    """Every command of the students' README, in order, in a fresh virtual environment inside the release.

    Not run: `$EDITOR` (a person's) and `course watch` (it waits for keys); `course reset` is given
    `--yes`, as no terminal is there to confirm on. The requirements are the
    packages installed here, seen through a .pth file, so only pip's build backend is fetched;
    `pip install -e .` installs the release's own `course`, which every later command runs."""
    out = tmp_path / "students"
    release(load_course(REPO), out)
    commands = [c for c in _readme_commands((out / "README.md").read_text(encoding="utf-8"))
                if not c.startswith(("$EDITOR", "course watch"))]
    # Without a terminal to confirm on, `course reset` wants --yes (a person answers its question).
    commands = [re.sub(r"^(course reset \S+)", r"\1 --yes", c) for c in commands]
    assert commands[:3] == ["python3 -m venv .venv && . .venv/bin/activate", "pip install -e .", "course"]
    python = tmp_path / "bin"
    python.mkdir()
    (python / "python3").symlink_to(sys._base_executable)  # noqa: SLF001 - the Python this one was made from
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COURSE_", "VIRTUAL_ENV", "PYTHON"))}
    env.update(PATH=f"{python}{os.pathsep}{env['PATH']}", PIP_DISABLE_PIP_VERSION_CHECK="1")
    said = []
    for k, command in enumerate(commands):
        line = command if k == 0 else f". .venv/bin/activate && {command}"
        if command.startswith("course run "):  # a script of the student's own: one kernel, run where no TPU is
            (out / command.split()[2]).write_text(MY_KERNEL, encoding="utf-8")
        done = subprocess.run(["bash", "-c", line], cwd=out, env=env, input="y\n", capture_output=True, text=True,
                              timeout=600, check=False)
        said.append(f"$ {command} -> {done.returncode}\n{done.stdout[-1500:]}{done.stderr[-1500:]}")
        if k == 0:
            _reuse_installed(out / ".venv")
        # Refusals the tour meets honestly: no solutions in a release, and no backup of exercise 2, whose
        # stub this student never edited (a reset of an untouched stub has nothing to keep).
        refusals = {"course solution": "solutions are not part of this copy", "course restore": "there is no backup"}
        refused = next((said_ for start, said_ in refusals.items() if command.startswith(start)), None)
        expected = (2,) if refused else (0, 1) if command.startswith("course") else (0,)
        assert done.returncode in expected, "\n".join(said)
        if command.startswith("course run "):
            assert done.stdout.strip().endswith("[1. 2. 3. 4.]"), "\n".join(said)
        if refused:
            assert refused in " ".join(done.stderr.split()), said[-1]
    where = subprocess.run(["bash", "-c", ". .venv/bin/activate && python -c 'import course; print(course.__file__)'"],
                           cwd=out, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert where.stdout.strip().startswith(str(out)), where.stdout + where.stderr


@pytest.mark.parametrize("where", ["nonempty", "course"])
def test_release_refuses_a_folder_in_use(tmp_path: Path, mini_course: Path, cli: CliRunner, where: str) -> None:
    """A folder that is not new, or the course's own, is a usage error."""
    out = tmp_path / "full" if where == "nonempty" else mini_course / "exercises" / "copy"
    if where == "nonempty":
        (out / "x").mkdir(parents=True)
    done = cli.invoke(app, ["release", str(out), "--course", str(mini_course)])
    assert done.exit_code == 2, done.output
