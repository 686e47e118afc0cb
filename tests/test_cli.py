"""The learner's commands through typer's CliRunner, on a private copy of the mini-course."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer
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
    assert set(ex["checks"][0]) == {"id", "title", "status", "score", "max_score", "message", "output"}


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


HEAVY = ("jax", "typer", "pydantic", "rich.console", "course.engine", "course.stubs", "filelock", "psutil",
         "hypothesis")
"""What plain `course list` never imports: its start-up is its imports (benchmarks/bench_list.py)."""


def _list_in_subprocess(course: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    """Run the console script's entry with `argv` inside `course`; report heavy imports on stderr."""
    code = (
        "import sys\nfrom course.entry import main\n"
        f"sys.argv = ['course', *{argv!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"sys.stderr.write(' '.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=course)


def test_list_never_imports_jax(mini_course: Path) -> None:
    """`course list` runs without importing JAX; plain `course list` not even typer, pydantic, rich's Console
    (`course.ui.plain` prints in its place) or the engine."""
    first = _list_in_subprocess(mini_course, ["list"])
    assert "jax" not in first.stderr and "ex_pass" in first.stdout
    again = _list_in_subprocess(mini_course, ["list"])  # validation memoized by the first run
    assert again.stderr == "" and again.stdout == first.stdout
    with_option = _list_in_subprocess(mini_course, ["list", "--course", str(mini_course)])
    assert with_option.stderr.split() == ["typer", "rich.console"] and with_option.stdout == first.stdout


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
    assert f"0/{marks['ex_fail']:g}" in listed and f"0/7 passed · 0 of {sum(marks.values()):g} points" in listed


def _trim(course: Path, keep: list[str]) -> None:
    """Keep only the exercises `keep` in a course copy's course.toml (each grading costs seconds)."""
    toml = course / "course.toml"
    text = toml.read_text()
    start = text.index("exercises = [")
    end = text.index("]", start) + 1
    toml.write_text(text[:start] + "exercises = [" + ", ".join(f'"{n}"' for n in keep) + "]" + text[end:])


@pytest.mark.parametrize("typed", ["1", "01", "01_ex_pass", "ex-pass", "ex_pass.py", "exercises/01_ex_pass/"])
def test_show_takes_an_exercise_as_people_type_it(cli: CliRunner, mini_course: Path, typed: str) -> None:
    """`course show` finds the exercise by number, folder, file, dashes or a tab-completed path."""
    result = run(cli, mini_course, "show", typed, "--no-pager")
    assert result.exit_code == 0, result.output
    assert "Return twice the input." in result.stdout and "ex_pass.py" in result.stdout


def test_check_takes_a_path_to_the_file(cli: CliRunner, mini_course: Path) -> None:
    """`course check exercises/01_ex_pass/ex_pass.py` (absolute or relative) grades that exercise."""
    path = mini_course / "exercises" / "01_ex_pass" / "ex_pass.py"
    result = run(cli, mini_course, "check", str(path), "--json")
    assert result.exit_code == 0, result.output
    assert [e["name"] for e in json.loads(result.stdout)["exercises"]] == ["ex_pass"]


def test_a_wrong_name_gets_one_sentence_with_the_closest(cli: CliRunner, mini_course: Path) -> None:
    """A typo in a name is exit 2 with one line naming the nearest exercise."""
    result = run(cli, mini_course, "hint", "ex_fial")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "error: There is no exercise named `ex_fial`; did you mean `ex_fail`? (`course list` shows the names)"]


def test_show_hint_and_reset_default_to_the_current_exercise(cli: CliRunner, mini_course: Path) -> None:
    """Without a name, `show`, `hint` and `reset` act on the current exercise (the first not passed)."""
    assert "Edit: " in run(cli, mini_course, "show", "--no-pager").stdout
    assert "Hint 1 of 3 for ex_pass:" in run(cli, mini_course, "hint").stdout
    (mini_course / "exercises/01_ex_pass/ex_pass.py").write_text("def double(x):\n    return x + x  # mine\n")
    result = run(cli, mini_course, "reset", "--yes")
    assert result.exit_code == 0 and "Restored the stub of ex_pass" in result.stdout


def test_a_command_typo_is_suggested_once(cli: CliRunner, mini_course: Path) -> None:
    """`course chek` says `course check` once, in one sentence, and exits 2."""
    result = cli.invoke(app, ["chek", "--course", str(mini_course)])
    assert result.exit_code == 2
    assert result.stderr.strip() == "error: there is no command `chek`; did you mean `course check`?"


def test_help_has_a_learning_and_a_teaching_panel(cli: CliRunner) -> None:
    """`--help` lists the learner's commands, then the teacher's, each description whole on its line."""
    from course.options import LEARNING

    text = cli.invoke(app, ["--help"], terminal_width=80).stdout
    learning, teaching = text.index("Learning:"), text.index("Teaching:")
    assert learning < teaching
    learner_lines = text[learning:teaching].strip().splitlines()[1:]
    registered = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    assert [line.split()[0] for line in learner_lines] == [n for n in LEARNING if n in registered]
    assert "inspect" in LEARNING  # the learning panel keeps its place for `course inspect`
    assert all(len(line) <= 80 and not line.rstrip().endswith("...") for line in learner_lines)
    assert all(name in text[teaching:] for name in ("new", "validate", "release", "grade", "autograder"))
    assert "..." not in text[learning:]


def test_list_shows_part_headings_aligned(cli: CliRunner, mini_course: Path) -> None:
    """Parts from course.toml head their exercises; the columns line up; no line ends in a space."""
    toml = mini_course / "course.toml"
    toml.write_text(toml.read_text() + 'parts = [{title = "Part A: basics", first = "ex_pass"},'
                    ' {title = "Part B: crashes", first = "ex_syntax"}]\n')
    lines = run(cli, mini_course, "list").stdout.splitlines()
    assert lines.index("Part A: basics") < next(i for i, x in enumerate(lines) if "ex_pass" in x)
    part_b = lines.index("Part B: crashes")
    assert "ex_fail" in lines[part_b - 1] and "ex_syntax" in lines[part_b + 1]
    rows = [x for x in lines if "fixture" in x]
    assert len(rows) == 7 and len({x.index("fixture") for x in rows}) == 1
    assert all(x == x.rstrip() for x in lines)


def test_one_points_rule_everywhere(cli: CliRunner, mini_course: Path) -> None:
    """Partial credit counts: the list's rows, its total, `progress --json` and the check's last words
    all agree, and the total is the sum of what the rows show."""
    _trim(mini_course, ["ex_pass", "ex_fail"])
    (mini_course / "exercises/02_ex_fail/ex_fail.py").write_text("def double(x):\n    return 2 * x if x else 1\n")
    checked = run(cli, mini_course, "check", "--all")
    assert checked.exit_code == 1
    listed = run(cli, mini_course, "list").stdout
    assert "3/3" in listed and "1/3" in listed and "1/2 passed · 4 of 6 points" in listed
    progress = json.loads(run(cli, mini_course, "progress", "--json").stdout)
    assert progress["score"] == sum(e["score"] for e in progress["exercises"]) == 4
    assert "Points: 4 of 6" in checked.stdout


def test_check_all_shows_first_failures_and_a_summary(cli: CliRunner, mini_course: Path) -> None:
    """With several exercises: the first failing check of each (every one with -v), then a table."""
    _trim(mini_course, ["ex_pass", "ex_fail"])
    text = run(cli, mini_course, "check", "--all").stdout
    assert "double(0) should be 0" not in text and "1 more failing: `course check ex_fail`" in text
    assert "double returns twice its input." in text.split("1 more failing")[0]
    table = text[text.index("   #  exercise"):]
    assert re.search(r"1  ex_pass +✓ passed +3/3\n +2  ex_fail +✗ failed +0/3\n", table)
    verbose = run(cli, mini_course, "check", "--all", "-v").stdout
    assert "double(0) should be 0" in verbose and "1 more failing" not in verbose


def test_an_untouched_stub_is_one_line_and_not_tried(
    cli: CliRunner, mini_course: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the runner says a file is the untouched stub, `check` prints one line for it, and the
    exercise is "not tried" afterwards even if it had failed before."""
    from course.engine.parent import runner
    from course.engine.parent.verdict import ExerciseResult

    assert run(cli, mini_course, "check", "ex_fail").exit_code == 1
    stub = mini_course / "exercises/02_ex_fail/ex_fail.py"
    stub.write_text('def double(x):\n    raise NotImplementedError("double is not written yet")\n')
    monkeypatch.setattr(runner, "grade", lambda exercise, *a, **k: ExerciseResult(
        exercise.name, "failed", max_score=3.0, not_tried=True, message="not tried: the stub"))
    result = run(cli, mini_course, "check", "ex_fail")
    assert result.exit_code == 1
    verdict = result.stdout.split("\n\n")[0]
    assert verdict == "ex_fail  · not tried  not started: the stub still raises NotImplementedError"
    assert "Next: edit exercises/02_ex_fail/ex_fail.py" in result.stdout or "Next: edit " in result.stdout
    statuses = {e["name"]: e["status"] for e in json.loads(run(cli, mini_course, "progress", "--json").stdout)[
        "exercises"]}
    assert statuses["ex_fail"] == "not_tried"


def test_reset_then_restore(cli: CliRunner, mini_course: Path) -> None:
    """After a pass and a reset the list says not tried (the solution stays open); `restore` brings the
    learner's version back and names the backup it came from."""
    _trim(mini_course, ["ex_pass", "ex_fail"])
    target = mini_course / "exercises/01_ex_pass/ex_pass.py"
    target.write_text("def double(x):\n    return x * 2  # mine\n")
    assert run(cli, mini_course, "check", "1").exit_code == 0
    reset = run(cli, mini_course, "reset", "1", "--yes")
    assert "`course restore ex_pass` brings it back" in reset.stdout
    listed = run(cli, mini_course, "list").stdout
    assert next(x for x in listed.splitlines() if "ex_pass" in x).count("not tried") == 1
    assert run(cli, mini_course, "solution", "ex_pass").exit_code == 0
    restored = run(cli, mini_course, "restore", "ex_pass")
    assert restored.exit_code == 0 and "# mine" in target.read_text()
    assert "Restored " in restored.stdout and ".course/backups/ex_pass." in restored.stdout


def test_progress_rows_align_with_local_times(cli: CliRunner, mini_course: Path) -> None:
    """`course progress`: one row per exercise, columns aligned, today's check said as `today HH:MM`."""
    _trim(mini_course, ["ex_pass", "ex_fail"])
    run(cli, mini_course, "check", "ex_pass")
    lines = [x for x in run(cli, mini_course, "progress").stdout.splitlines() if "ex_" in x]
    assert len(lines) == 2 and len({x.index("ex_") for x in lines}) == 1
    assert re.search(r"today \d\d:\d\d$", lines[0]) and lines[1].endswith("never checked")


def test_paths_are_shown_relative_to_here(cli: CliRunner, mini_course: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Inside the course, the file to edit is shown from the current folder."""
    monkeypatch.chdir(mini_course / "exercises")
    shown = run(cli, mini_course, "show", "2", "--no-pager").stdout
    assert "Edit: 02_ex_fail/ex_fail.py" in shown


def test_unknown_progress_version_is_exit_2(cli: CliRunner, mini_course: Path) -> None:
    """A progress file of a newer format stops every command with one sentence, and is left intact."""
    state = mini_course / ".course"
    state.mkdir(exist_ok=True)
    (state / "progress.json").write_text('{"version": 99, "exercises": {}}')
    result = run(cli, mini_course, "list")
    assert result.exit_code == 2 and "format 99" in result.stderr
    assert (state / "progress.json").read_text() == '{"version": 99, "exercises": {}}'


def test_accelerator_requests_are_answered(cli: CliRunner, mini_course: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`JAX_PLATFORMS=cuda course check` says, once, that grading runs on the CPU, what a TPU adds and how to
    try the GPU; with the CPU asked for, nothing is said."""
    _trim(mini_course, ["ex_pass"])
    monkeypatch.setenv("JAX_PLATFORMS", "cuda")
    said = run(cli, mini_course, "check", "ex_pass").stderr
    assert said.count("grading runs on the CPU") == 1 and "JAX_PLATFORMS=cuda" in said
    assert "your own script or notebook" in said and "course bench" in said
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    assert "grading runs on the CPU" not in run(cli, mini_course, "check", "ex_pass").stderr


def test_an_installed_plugin_is_mentioned_once_per_workspace(tmp_path: Path, mini_course: Path) -> None:
    """A folder of an accelerator plugin on the import path is found without importing anything, and the
    workspace is told about it once."""
    from course import accelerator
    from course.paths import WorkspacePaths

    site = tmp_path / "site"
    (site / "jax_cuda12_plugin").mkdir(parents=True)
    assert accelerator.installed_plugin([str(site)]) == "jax_cuda12_plugin"
    assert accelerator.installed_plugin([str(tmp_path / "empty")]) is None
    paths = WorkspacePaths(mini_course)
    original = accelerator.installed_plugin
    try:
        accelerator.installed_plugin = lambda path=None: "jax_cuda12_plugin"  # type: ignore[assignment]
        first = accelerator.notice(paths, env={})
        assert first is not None and "jax_cuda12_plugin is installed" in first
        assert accelerator.notice(paths, env={}) is None
    finally:
        accelerator.installed_plugin = original  # type: ignore[assignment]


def _course_process(course: Path, *args: str) -> subprocess.Popen[bytes]:
    """`course ARGS` as a separate process whose stdout is a pipe."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "COURSE_ROOT", "COURSE_WORKSPACE")}
    return subprocess.Popen([sys.executable, "-m", "course", *args, "--course", str(course)], cwd=course,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)


@pytest.mark.parametrize(("name", "code"), [("ex_pass", 0), ("ex_fail", 1)])
def test_a_closed_pipe_ends_quietly_with_the_checks_code(mini_course: Path, name: str, code: int) -> None:
    """`course check NAME | head -1`: when the reader has gone, the command still exits with its own code
    (0 on a pass, 1 on a failure) and prints no traceback or pipe error."""
    proc = _course_process(mini_course, "check", name)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader leaves before anything is written
    errors = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == code
    assert "Traceback" not in errors and "Broken pipe" not in errors and "Exception ignored" not in errors


def test_piped_output_has_no_trailing_padding(mini_course: Path) -> None:
    """`course list | cat` and `course check | cat`: no line ends in a space."""
    for args in (("list",), ("check", "ex_fail"), ("progress",)):
        proc = _course_process(mini_course, *args)
        out, _ = proc.communicate(timeout=120)
        lines = out.decode().splitlines()
        assert lines and all(x == x.rstrip() for x in lines), (args, [x for x in lines if x != x.rstrip()][:3])


def test_check_on_a_terminal_shows_each_check_as_it_ends(mini_course: Path, tmp_path: Path) -> None:
    """In a terminal, `course check` names the exercise being graded, shows a check's verdict as soon as it
    ends and names the check running now; the final verdict follows."""
    from terminal import Terminal

    release = tmp_path / "release"
    grader = mini_course / "graders/01_ex_pass/test_ex_pass.py"
    grader.write_text(
        "import time\nfrom pathlib import Path\n\n\n"
        "def test_first(submission):\n    \"\"\"The first check ends at once.\"\"\"\n\n\n"
        "def test_second(submission):\n    \"\"\"The second check waits for the test.\"\"\"\n"
        f"    while not Path({str(release)!r}).exists():\n        time.sleep(0.02)\n"
    )
    term = Terminal(["check", "ex_pass"], cwd=mini_course)
    try:
        term.expect("checking ex_pass (1 of 7)")
        term.expect("✓ passed  The first check ends at once.")
        term.expect("… The second check waits for the test.")  # the check running now is named
        assert term.proc.poll() is None and "passed  The second check" not in term.text()
        release.touch()
        term.expect("ex_pass  ✓ passed  2/2 points")
        assert term.proc.wait(timeout=60) == 0
    finally:
        term.close()


def test_check_all_on_a_terminal_shows_its_progress(mini_course: Path) -> None:
    """`course check --all` in a terminal shows a bar of the exercises graded so far; piped, only the result."""
    from terminal import Terminal

    _trim(mini_course, ["ex_pass", "ex_fail"])
    term = Terminal(["check", "--all"], cwd=mini_course)
    try:
        term.expect("grading 2 exercises")
        term.expect("ex_fail  ✗ failed")
        assert term.proc.wait(timeout=120) == 1
    finally:
        term.close()
    piped = _course_process(mini_course, "check", "--all")
    out, _ = piped.communicate(timeout=120)
    assert b"grading 2 exercises" not in out and b"checking" not in out and b"ex_fail  \xe2\x9c\x97 failed" in out


def test_options_before_the_command_count(cli: CliRunner, mini_course: Path, tmp_path: Path) -> None:
    """`course --course C init W` and `course --workspace W progress` use what was given before the command."""
    workspace = tmp_path / "before"
    assert cli.invoke(app, ["--course", str(mini_course), "init", str(workspace)]).exit_code == 0
    marker = (workspace / ".course" / "workspace.toml").read_text()
    assert str(mini_course.resolve().as_posix()) in marker
    (workspace / "exercises/01_ex_pass/ex_pass.py").unlink()
    result = cli.invoke(app, ["--course", str(mini_course), "--workspace", str(workspace), "check", "ex_pass",
                              "--json"])
    assert json.loads(result.stdout)["exercises"][0]["message"].startswith("not tried")


def test_a_number_out_of_range_says_the_range(cli: CliRunner, mini_course: Path) -> None:
    """`course show 8` in a course of 7 says the exercises are numbered 1-7, not a guess at a name."""
    result = run(cli, mini_course, "show", "8")
    assert result.exit_code == 2
    assert "There is no exercise named `8`; the exercises are numbered 1-7" in result.stderr


def test_checking_another_file_says_which_file_is_graded(cli: CliRunner, mini_course: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """`course check solutions/01_ex_pass/ex_pass.py` names ex_pass, but grades the learner's own file of it,
    and says so rather than grading another file than the one named without a word."""
    monkeypatch.chdir(mini_course)
    result = run(cli, mini_course, "check", "solutions/01_ex_pass/ex_pass.py", "--json")
    said = " ".join(result.stderr.split())
    assert "solutions/01_ex_pass/ex_pass.py is not the file `course check` grades: it grades your file of " \
           "ex_pass, exercises/01_ex_pass/ex_pass.py" in said
    assert [e["name"] for e in json.loads(result.stdout)["exercises"]] == ["ex_pass"]
    quiet = run(cli, mini_course, "check", "exercises/01_ex_pass/ex_pass.py", "--json")
    assert "not the file" not in quiet.stderr
