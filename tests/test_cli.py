"""The learner's commands through typer's CliRunner, on a private copy of the mini-course."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from course.cli import app
from course.registry import load_course


def run(cli: CliRunner, course: Path, *args: str) -> object:
    """Invoke `course ARGS --course COURSE`."""
    return cli.invoke(app, [*args, "--course", str(course)], catch_exceptions=False)


def test_list_shows_every_exercise(cli: CliRunner, mini_course: Path) -> None:
    """`course list` shows the table with statuses and a progress bar."""
    result = run(cli, mini_course, "list")
    assert result.exit_code == 0, result.output
    assert "ex_pass" in result.stdout and "not tried" in result.stdout and "0/7 passed" in result.stdout


def test_bare_course_says_what_next(cli: CliRunner, mini_course: Path) -> None:
    """`course` alone lists and points at the current exercise's file."""
    result = cli.invoke(app, ["--course", str(mini_course)])
    assert result.exit_code == 0, result.output
    assert "Next: edit" in result.stdout and "ex_pass.py" in result.stdout


def test_check_json_is_only_json(cli: CliRunner, mini_course: Path) -> None:
    """`--json` prints exactly one JSON object with the SPEC's keys; exit 0 on a pass."""
    result = run(cli, mini_course, "check", "ex_pass", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data) == {"course", "jax_version", "passed", "total", "exercises"}
    assert data["jax_version"] == "0.10.2" and data["passed"] == 1
    ex = data["exercises"][0]
    assert ex["status"] == "passed" and ex["score"] == ex["max_score"] == 3
    assert set(ex["checks"][0]) == {"id", "title", "status", "score", "max_score", "message"}


def test_check_failure_then_default_moves_on(cli: CliRunner, mini_course: Path) -> None:
    """A failure exits 1 with the rule; after a pass the default check is the next exercise."""
    assert run(cli, mini_course, "check", "ex_pass").exit_code == 0
    result = run(cli, mini_course, "check")
    assert result.exit_code == 1, result.output
    assert "ex_fail" in result.stdout and "should be" in result.stdout and "course hint ex_fail" in result.stdout
    progress = json.loads(run(cli, mini_course, "progress", "--json").stdout)
    statuses = {e["name"]: e["status"] for e in progress["exercises"]}
    assert statuses["ex_pass"] == "passed" and statuses["ex_fail"] == "failed" and statuses["ex_loop"] == "not_tried"
    assert progress["passed"] == 1 and progress["score"] == 3


def test_unknown_exercise_is_usage_error(cli: CliRunner, mini_course: Path) -> None:
    """An unknown name exits 2 with one sentence."""
    result = run(cli, mini_course, "check", "nope")
    assert result.exit_code == 2
    assert "There is no exercise named `nope`" in result.stderr


def test_grader_without_checks_is_exit_3(cli: CliRunner, mini_course: Path) -> None:
    """The platform's own failure exits 3 and says it is not the learner's fault."""
    result = run(cli, mini_course, "check", "ex_no_tests")
    assert result.exit_code == 3 and "not your code" in result.stdout


def test_broken_exercise_toml_exit_2(cli: CliRunner, mini_course: Path) -> None:
    """A broken exercise.toml exits 2 naming the file and field."""
    meta = mini_course / "exercises/02_ex_fail/exercise.toml"
    meta.write_text(meta.read_text() + "surprise = 1\n")
    result = run(cli, mini_course, "list")
    assert result.exit_code == 2 and "`surprise`" in result.stderr and "02_ex_fail" in result.stderr


def test_hints_one_level_at_a_time(cli: CliRunner, mini_course: Path) -> None:
    """Each call reveals the next level; --level past the last is a usage error."""
    texts = [run(cli, mini_course, "hint", "ex_fail").stdout for _ in range(4)]
    assert "Hint 1 of 3" in texts[0] and "Hint 2 of 3" in texts[1] and "Hint 3 of 3" in texts[3]
    assert run(cli, mini_course, "hint", "ex_fail", "--level", "9").exit_code == 2


def test_reset_keeps_a_backup(cli: CliRunner, mini_course: Path) -> None:
    """Reset restores the stub and keeps the learner's version; without --yes it asks."""
    target = mini_course / "exercises/02_ex_fail/ex_fail.py"
    stub = target.read_text()
    target.write_text("# my precious work\n")
    assert run(cli, mini_course, "reset", "ex_fail").exit_code == 2
    assert target.read_text() == "# my precious work\n"
    result = run(cli, mini_course, "reset", "ex_fail", "--yes")
    assert result.exit_code == 0, result.output
    assert target.read_text() == stub
    backups = list((mini_course / ".course/backups").glob("ex_fail.*.py"))
    assert [b.read_text() for b in backups] == ["# my precious work\n"]


def test_solution_only_after_pass(cli: CliRunner, mini_course: Path) -> None:
    """The reference solution is refused before a pass and shown after."""
    assert run(cli, mini_course, "solution", "ex_pass").exit_code == 1
    run(cli, mini_course, "check", "ex_pass")
    result = run(cli, mini_course, "solution", "ex_pass")
    assert result.exit_code == 0 and "return 2 * x" in result.stdout


def test_show_prints_lesson_and_path(cli: CliRunner, mini_course: Path) -> None:
    """`show` renders the lesson and names the file to edit."""
    result = run(cli, mini_course, "show", "ex_fail")
    assert result.exit_code == 0 and "Return twice the input." in result.stdout and "ex_fail.py" in result.stdout


def test_init_workspace_and_not_tried(cli: CliRunner, mini_course: Path, tmp_path: Path) -> None:
    """`init` copies only the stubs; a missing file is graded 'not tried' (exit 1), never a crash."""
    ws = tmp_path / "ws"
    assert run(cli, mini_course, "init", str(ws)).exit_code == 0
    files = sorted(p.relative_to(ws).as_posix() for p in ws.rglob("*.py"))
    assert files == sorted(
        f"exercises/{e}"
        for e in [
            "01_ex_pass/ex_pass.py",
            "02_ex_fail/ex_fail.py",
            "03_ex_syntax/ex_syntax.py",
            "04_ex_loop/ex_loop.py",
            "05_ex_exit_import/ex_exit_import.py",
            "06_ex_os_exit/ex_os_exit.py",
            "07_ex_no_tests/ex_no_tests.py",
        ]
    )
    (ws / "exercises/01_ex_pass/ex_pass.py").unlink()
    result = run(cli, mini_course, "check", "ex_pass", "--workspace", str(ws), "--json")
    assert result.exit_code == 1
    assert json.loads(result.stdout)["exercises"][0]["message"].startswith("not tried")


def _list_in_subprocess(course: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    """Run the console script's entry with `argv` inside `course`; report heavy imports on stderr."""
    code = (
        "import sys\nfrom course.entry import main\n"
        f"sys.argv = ['course', *{argv!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "sys.stderr.write(' '.join(m for m in ('jax', 'typer', 'pydantic') if m in sys.modules))\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=course)


def test_list_never_imports_jax(mini_course: Path) -> None:
    """`course list` runs without importing JAX; plain `course list` not even typer or pydantic."""
    first = _list_in_subprocess(mini_course, ["list"])
    assert "jax" not in first.stderr and "ex_pass" in first.stdout
    again = _list_in_subprocess(mini_course, ["list"])  # validation memoized by the first run
    assert again.stderr == "" and again.stdout == first.stdout
    with_option = _list_in_subprocess(mini_course, ["list", "--course", str(mini_course)])
    assert with_option.stderr.split() == ["typer"] and with_option.stdout == first.stdout


def test_fast_path_reports_errors_like_the_cli(mini_course: Path) -> None:
    """Plain `course list` turns a broken course.toml into one sentence and exit 2, as the CLI does."""
    (mini_course / "course.toml").write_text("title = [\n")
    code = "import sys\nfrom course.entry import main\nsys.argv = ['course', 'list']\nmain()\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=mini_course)
    assert done.returncode == 2 and "is not valid TOML" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("debug", ["0", "1"])
def test_course_debug_controls_traceback(
    cli: CliRunner, mini_course: Path, monkeypatch: pytest.MonkeyPatch, debug: str
) -> None:
    """Errors are one sentence; COURSE_DEBUG=1 lets the exception through."""
    monkeypatch.setenv("COURSE_DEBUG", debug)
    (mini_course / "course.toml").write_text("oops")
    result = cli.invoke(app, ["list", "--course", str(mini_course)])
    if debug == "1":
        assert result.exception is not None and type(result.exception).__name__ == "RegistryError"
    else:
        assert result.exit_code == 2 and "Traceback" not in result.output


def test_reset_refuses_without_original(cli: CliRunner, mini_course: Path) -> None:
    """Outside a git checkout, resetting a file edited in place is refused rather than guessed."""
    import shutil

    shutil.rmtree(mini_course / ".git")
    target = mini_course / "exercises/02_ex_fail/ex_fail.py"
    target.write_text("# mine\n")
    result = run(cli, mini_course, "reset", "ex_fail", "--yes")
    assert result.exit_code == 2 and "cannot be found" in result.stderr
    assert target.read_text() == "# mine\n"


def test_points_known_before_anything_is_graded(cli: CliRunner, mini_course: Path, tmp_path: Path) -> None:
    """On a fresh workspace, `progress --json` and `list` give the course's true total, read from the graders."""
    workspace = tmp_path / "fresh"
    assert run(cli, mini_course, "init", str(workspace)).exit_code == 0
    progress = json.loads(run(cli, mini_course, "progress", "--json", "--workspace", str(workspace)).stdout)
    marks = {e.name: e.max_score for e in load_course(mini_course).exercises}
    assert progress["max_score"] == sum(marks.values()) > 0 and progress["score"] == 0
    assert {e["name"]: e["max_score"] for e in progress["exercises"]} == marks
    listed = run(cli, mini_course, "list", "--workspace", str(workspace)).stdout
    assert f"0/{marks['ex_fail']:g}" in listed and f"Points: 0 of {sum(marks.values()):g}" in listed
