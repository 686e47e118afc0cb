"""`course inspect` as a learner meets it: the command's output, `--json`, exit codes, and files that get in its way."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from course.cli import app

REPO = Path(__file__).resolve().parents[2]
SOLUTION = REPO / "solutions" / "01_update_with_donate" / "update_with_donate.py"


@pytest.fixture
def workspace(cli: CliRunner, tmp_path: Path) -> Path:
    """A fresh learner workspace of the real course (the stubs only)."""
    folder = tmp_path / "ws"
    assert cli.invoke(app, ["init", str(folder), "--course", str(REPO)]).exit_code == 0
    return folder


def inspect(cli: CliRunner, workspace: Path, *args: str) -> object:
    """`course inspect ARGS` in `workspace`."""
    return cli.invoke(app, ["inspect", *args, "--course", str(REPO), "--workspace", str(workspace)],
                      catch_exceptions=False)


def learner_file(workspace: Path) -> Path:
    """The learner's file of update_with_donate in `workspace`."""
    return workspace / "exercises" / "01_update_with_donate" / "update_with_donate.py"


def test_a_stub_is_not_started(cli: CliRunner, workspace: Path) -> None:
    """An untouched stub is one line and exit 1, without starting a grading process."""
    result = inspect(cli, workspace, "update_with_donate")
    assert result.exit_code == 1, result.output
    assert "not started: the stub still raises NotImplementedError" in result.stdout
    assert "Donation" not in result.stdout


@pytest.mark.slow
def test_the_current_exercise_is_inspected_section_by_section(cli: CliRunner, workspace: Path) -> None:
    """Without a name, the current exercise: each section of its exercise.toml, in the course's words."""
    shutil.copy(SOLUTION, learner_file(workspace))
    result = inspect(cli, workspace)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.startswith("update_with_donate  what your code does")
    assert out.index("Donation") < out.index("Compiles")
    assert "donates state; aliases 4096 bytes (alias_size_in_bytes)" in out
    assert "after the call: state consumed; delta alive" in out
    assert "compiled jit(_add): `state` has a new shape, f32[1024] → f32[64]" in out
    assert "2 of 3 calls compiled your code." in out
    assert not [line for line in out.splitlines() if line != line.rstrip()], "no line ends in padding"


@pytest.mark.slow
def test_json_is_one_object(cli: CliRunner, workspace: Path) -> None:
    """`--json` prints exactly one JSON object: the course, JAX's version and every section's report."""
    shutil.copy(SOLUTION, learner_file(workspace))
    result = inspect(cli, workspace, "update_with_donate", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data) == {"course", "jax_version", "name", "status", "message", "duration_s", "processes", "devices",
                         "sections"}
    assert (data["processes"], data["devices"]) == (1, 1)
    assert (data["name"], data["status"], data["jax_version"]) == ("update_with_donate", "inspected", "0.10.2")
    assert [s["show"] for s in data["sections"]] == ["donation", "compiles"]
    (jit,) = data["sections"][0]["calls"][0]["jits"]
    assert jit["alias_bytes"] == 4096


def test_an_unknown_name_is_a_usage_error(cli: CliRunner, workspace: Path) -> None:
    """A name that is no exercise: exit 2 and one sentence."""
    result = inspect(cli, workspace, "no_such_exercise")
    assert result.exit_code == 2
    assert "no_such_exercise" in result.output


@pytest.mark.slow
def test_a_file_that_fails_to_import_says_so_once(cli: CliRunner, workspace: Path) -> None:
    """An exception while importing the file is the learner's: one message, exit 1, never 3."""
    learner_file(workspace).write_text("raise RuntimeError('half written')\n")
    result = inspect(cli, workspace, "update_with_donate")
    assert result.exit_code == 1, result.output
    assert "your file raised RuntimeError: half written while being imported" in result.stdout
    assert result.stdout.count("while being imported") == 1, "said once, not once per section"


@pytest.mark.slow
def test_an_observation_changed_by_the_learners_code_is_not_shown(cli: CliRunner, workspace: Path) -> None:
    """Code that rewrites an earlier section's observation on disk is caught by the signed digest."""
    forger = SOLUTION.read_text() + (
        "\n\nimport pathlib\n_real = update_with_donate\n\n\n"
        "def update_with_donate(state, delta):\n"
        "    forged = pathlib.Path.cwd() / 'observed' / 'section-0.json'\n"
        "    if forged.exists():\n"
        "        forged.write_text('{\"show\": \"donation\", \"calls\": []}')\n"
        "    return _real(state, delta)\n")
    learner_file(workspace).write_text(forger)
    result = inspect(cli, workspace, "update_with_donate", "--json")
    assert result.exit_code == 1, result.output
    donation, compiles = json.loads(result.stdout)["sections"]
    assert "was changed while your code ran" in donation["error"]["message"]
    assert compiles["calls"][0]["compiles"], "the untouched section is still shown"


def test_an_exercise_without_sections_says_how_to_add_them(cli: CliRunner, mini_course: Path) -> None:
    """An exercise whose exercise.toml lists no sections: exit 2, naming the guide."""
    result = cli.invoke(app, ["inspect", "ex_pass", "--course", str(mini_course)])
    assert result.exit_code == 2
    assert "lists no [inspect] sections" in result.output and "docs/authoring.md" in result.output


@pytest.mark.slow
def test_an_endless_loop_ends_at_the_exercises_limit(cli: CliRunner, mini_course: Path) -> None:
    """The inspection runs under the check's own limits: ex_loop's 8 CPU seconds stop it at its line, exit 1."""
    meta = mini_course / "exercises" / "04_ex_loop" / "exercise.toml"
    meta.write_text(meta.read_text() + '\n[[inspect.sections]]\nshow = "compiles"\ncalls = ["double(0)"]\n')
    stub = mini_course / "exercises" / "04_ex_loop" / "ex_loop.py"
    stub.write_text(stub.read_text() + "# no longer the stub\n")
    result = cli.invoke(app, ["inspect", "ex_loop", "--course", str(mini_course)])
    assert result.exit_code == 1, result.output
    said = " ".join(result.stdout.split())
    assert "used 8 s of CPU time, this exercise's limit" in said, said
    assert "ex_loop.py line 7, in double" in said, said  # where it was stopped, as a check says it


@pytest.mark.slow
def test_code_that_patches_an_observer_is_tampering(cli: CliRunner, workspace: Path) -> None:
    """The observers are part of the machinery the grading guard watches: replacing one voids the inspection."""
    patcher = SOLUTION.read_text() + (
        "\n\n_real = update_with_donate\n\n\n"
        "def update_with_donate(state, delta):\n"
        "    import course.grading.inspect.compiles as shown\n"
        "    shown.observe = lambda calls, module, path: [{'compiles': []} for _ in calls]\n"
        "    return _real(state, delta)\n")
    learner_file(workspace).write_text(patcher)
    result = inspect(cli, workspace, "update_with_donate")
    assert result.exit_code == 1, result.output
    assert "the grading machinery was tampered with" in result.stdout
    assert "Compiles" not in result.stdout


@pytest.mark.slow
def test_a_failure_of_the_inspection_itself_is_the_platforms(workspace: Path) -> None:
    """A section the observers cannot run is the course's problem: exit 3, never blamed on the learner."""
    from course.engine.parent.inspection import inspect as run
    from course.registry import load_course

    exercise = load_course(REPO).get("update_with_donate")
    shutil.copy(SOLUTION, learner_file(workspace))
    found = run(exercise, learner_file(workspace), [{"index": 0, "show": "no_such_section", "calls": ["f()"]}])
    (section,) = found.sections
    assert "the inspection itself failed" in section["error"]["message"] and not section["error"]["yours"]
    assert found.exit_code == 3
