"""`course` from Python and Jupyter: the API's reports and the IPython extension, driven by IPython's own shell."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import course
from course import notebook

REPO = Path(__file__).resolve().parents[1]
GOOD = 'def double(x):\n    """Twice x."""\n    return 2 * x\n'


@pytest.fixture
def shell(mini_course: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """IPython's interactive shell (no kernel), with `%load_ext course` done, on a copy of the mini-course."""
    from IPython.core.interactiveshell import InteractiveShell

    for name in ("COURSE_WORKSPACE", "COURSE_DEBUG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COURSE_ROOT", str(mini_course))
    monkeypatch.setenv("COURSE_NO_PROGRESS", "1")
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "course")
    yield ip
    ip.run_line_magic("unload_ext", "course")


def learner_file(mini_course: Path, name: str) -> Path:
    """The learner's file of a mini-course exercise (the course is its own workspace)."""
    folder = next((mini_course / "exercises").glob(f"*_{name}"))
    return folder / f"{name}.py"


def test_importing_course_stays_light() -> None:
    """`import course`, and reaching `course.check` and `course.inspect`, import neither JAX nor IPython."""
    code = ("import sys, course; course.check; course.inspect; course.load_ipython_extension; "
            "print(sorted(m for m in ('jax', 'IPython', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_extension_registers_a_line_and_a_cell_magic(shell: object) -> None:
    """`%load_ext course` gives both `%course` and `%%course`."""
    magics = shell.magics_manager.magics  # type: ignore[attr-defined]
    assert "course" in magics["line"] and "course" in magics["cell"]


def test_the_extension_interprets_the_notebooks_kernels_until_unloaded(shell: object) -> None:
    """`%load_ext course` makes the strict interpreter the kernels' mode where JAX has no TPU, as `course run`
    does; `%unload_ext course` leaves `interpret=` as written again."""
    from jax._src import config

    mode = config.pallas_tpu_interpret_mode_context_manager
    assert bool(mode.get_global()) and "InterpretParams(" in repr(mode.get_global())  # no TPU here: in force
    shell.run_line_magic("unload_ext", "course")  # type: ignore[attr-defined]
    assert mode.get_global() is None
    shell.run_line_magic("load_ext", "course")  # type: ignore[attr-defined]
    assert mode.get_global() is not None


@pytest.mark.slow
def test_check_returns_a_report_that_renders_in_a_notebook(shell: object, mini_course: Path) -> None:
    """`course.check(NAME)` grades and records; its report renders as text, HTML and Markdown alike."""
    report = course.check("ex_pass")
    assert isinstance(report, notebook.CheckReport) and report.passed and report.exit_code == 0
    text = repr(report)
    assert "ex_pass" in text and "passed" in text and "\x1b" not in text
    html = report._repr_html_()
    assert "<pre" in html and "ex_pass" in html and "color:" in html
    assert report._repr_markdown_().startswith("**course check ex_pass: passed**\n\n```text\n")
    assert report.to_json()["exercises"][0]["status"] == "passed"
    progress = json.loads((mini_course / ".course" / "progress.json").read_text())
    assert progress["exercises"]["ex_pass"]["status"] == "passed"


@pytest.mark.slow
def test_line_magic_check_returns_the_report(shell: object) -> None:
    """`%course check NAME` returns the report for the cell to show; a failure says which rule broke."""
    report = shell.run_line_magic("course", "check ex_fail")  # type: ignore[attr-defined]
    assert isinstance(report, notebook.CheckReport) and not report.passed
    assert "should be" in repr(report)


def test_other_commands_run_as_on_the_command_line(shell: object, capsys: pytest.CaptureFixture[str]) -> None:
    """`%course hint NAME`, `%course list`, an unknown name, and `%course watch`, which needs a terminal."""
    assert shell.run_line_magic("course", "hint ex_pass") is None  # type: ignore[attr-defined]
    assert "Hint 1 of 3 for ex_pass" in capsys.readouterr().out
    shell.run_line_magic("course", "list")  # type: ignore[attr-defined]
    assert "ex_loop" in capsys.readouterr().out
    assert shell.run_line_magic("course", "check nope") is None  # type: ignore[attr-defined]
    assert "nope" in capsys.readouterr().err
    shell.run_line_magic("course", "watch")  # type: ignore[attr-defined]
    assert "needs a terminal" in capsys.readouterr().out


@pytest.mark.slow
def test_a_cell_becomes_the_learners_file_and_is_graded(shell: object, mini_course: Path,
                                                         capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """`%%course NAME` keeps the learner's old file as a backup, writes the cell in its place, and grades it."""
    path = learner_file(mini_course, "ex_fail")
    mine = path.read_text() + "# my own attempt\n"
    path.write_text(mine)
    report = shell.run_cell_magic("course", "ex_fail", GOOD)  # type: ignore[attr-defined]
    assert isinstance(report, notebook.CheckReport) and report.passed
    assert path.read_text() == GOOD
    (backup,) = (mini_course / ".course" / "backups").glob("ex_fail.*.py")
    assert backup.read_text() == mine
    assert f"kept at {backup}" in " ".join(capsys.readouterr().out.split())
    monkeypatch.setattr(notebook, "check", lambda name: name)  # the saving alone, without grading again
    assert shell.run_cell_magic("course", "ex_fail", "def double(x):\n    return x") == "ex_fail"  # type: ignore[attr-defined]
    assert path.read_text() == "def double(x):\n    return x\n", "a cell without a final newline gets one"
    assert len(list((mini_course / ".course" / "backups").glob("ex_fail.*.py"))) == 2


def test_a_cell_over_the_stub_keeps_no_backup_and_a_bad_name_changes_nothing(
        shell: object, mini_course: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The untouched stub needs no backup (`course reset` brings it back); an unknown name writes nothing."""
    monkeypatch.setattr(notebook, "check", lambda name: name)  # the saving alone, without a grading
    assert shell.run_cell_magic("course", "ex_pass", GOOD) == "ex_pass"  # type: ignore[attr-defined]
    assert learner_file(mini_course, "ex_pass").read_text() == GOOD
    assert not (mini_course / ".course" / "backups").exists()
    assert shell.run_cell_magic("course", "no_such", GOOD) is None  # type: ignore[attr-defined]
    assert shell.run_cell_magic("course", "", GOOD) is None  # type: ignore[attr-defined]
    assert "no_such" in capsys.readouterr().err


@pytest.mark.slow
def test_inspect_returns_what_the_code_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`course.inspect(NAME)` shows the sections of `course inspect` and renders them in a notebook."""
    from typer.testing import CliRunner

    from course.cli import app

    monkeypatch.setenv("COURSE_NO_PROGRESS", "1")
    workspace = tmp_path / "ws"
    assert CliRunner().invoke(app, ["init", str(workspace), "--course", str(REPO)]).exit_code == 0
    shutil.copy(REPO / "solutions" / "01_update_with_donate" / "update_with_donate.py",
                workspace / "exercises" / "01_update_with_donate" / "update_with_donate.py")
    report = course.inspect("update_with_donate", course=REPO, workspace=workspace)
    assert isinstance(report, notebook.InspectReport)
    assert [s["show"] for s in report.sections] == ["donation", "compiles"]
    assert "aliases 4096 bytes" in repr(report) and "aliases 4096 bytes" in report._repr_html_()
    assert report.to_json()["status"] == "inspected"


def test_a_report_takes_the_width_it_is_shown_at(mini_course: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As text a report is laid out at the width of the terminal it is shown in (a terminal IPython's), so
    no word is broken where a narrower terminal wraps; as HTML its lines wrap to the notebook cell."""
    from course.engine.parent.verdict import CheckResult, ExerciseResult
    from course.session import Session

    why = "the donated buffer was not donated because the output has another shape; " * 3
    result = ExerciseResult(name="ex_fail", status="failed", max_score=1.0,
                            checks=[CheckResult("test_a", "The buffer is reused", "failed", 0.0, 1.0, why.strip())])
    report = notebook.CheckReport(Session.open(mini_course, mini_course), [result])
    monkeypatch.chdir(mini_course)  # paths are shown from here, as from a learner's workspace
    for columns in (60, 120):
        monkeypatch.setenv("COLUMNS", str(columns))
        lines = repr(report).splitlines()
        assert max(len(line) for line in lines) <= columns and max(len(line) for line in lines) > columns - 25
        assert all("donat" not in line.split()[-1] or line.split()[-1].startswith("donat") for line in lines if line)
    assert "white-space:pre-wrap" in report._repr_html_()


@pytest.mark.slow
def test_check_in_a_script_shows_its_verdict(mini_course: Path) -> None:
    """A script's `course.check(NAME)` is a statement whose value nobody shows: the verdict is printed as it
    returns, where the Python prompt and IPython would show the report they are given."""
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("COURSE_")}
    done = subprocess.run([sys.executable, "-c", "import course\ncourse.check('ex_fail')\n"], capture_output=True,
                          text=True, cwd=mini_course, env={**env, "COURSE_ROOT": str(mini_course)}, timeout=300)
    assert "ex_fail  ✗ failed" in done.stdout and "should be" in done.stdout, done.stdout + done.stderr


def test_a_misspelt_name_is_one_sentence_not_a_traceback(shell: object, mini_course: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """`course.check('ex_pas')` in a cell shows the command line's one sentence with its guess, not the frames
    of `course` that led to it; at a Python prompt the traceback is the learner's call and that sentence."""
    shell.run_cell("import course\ncourse.check('ex_pas')")  # type: ignore[attr-defined]
    shown = capsys.readouterr().out.strip().splitlines()
    assert shown == ["error: There is no exercise named `ex_pas`; did you mean `ex_pass` or `ex_loop` or `ex_fail`? "
                     "(`course list` shows the names)"], shown
    shell.run_cell("course.inspect('ex_pas')")  # type: ignore[attr-defined]
    assert capsys.readouterr().out.strip().startswith("error: There is no exercise named `ex_pas`")
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("COURSE_")}
    done = subprocess.run([sys.executable, "-c", "import course\ncourse.check('ex_pas')\n"], capture_output=True,
                          text=True, cwd=mini_course, env={**env, "COURSE_ROOT": str(mini_course)}, timeout=300)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) <= 6 and "did you mean `ex_pass`" in lines[-1], done.stderr


@pytest.mark.slow
def test_after_a_cell_the_next_step_is_the_cell(shell: object) -> None:
    """A `%%course NAME` cell is the learner's file: after it, the next step is to fix the cell and run it again
    (or, once it passes, a cell for the next exercise), not `course check` at a terminal."""
    report = shell.run_cell_magic("course", "ex_fail", "def double(x):\n    return x + 1\n")  # type: ignore[attr-defined]
    assert isinstance(report, notebook.CheckReport) and not report.passed
    said = " ".join(repr(report).split())
    assert "Next: fix the cell and run it again. Stuck? `%course hint ex_fail`." in said and "course check" not in said
    report = shell.run_cell_magic("course", "ex_pass", GOOD)  # type: ignore[attr-defined]
    assert isinstance(report, notebook.CheckReport) and report.passed
    said = " ".join(repr(report).split())
    assert "Next: `%course show ex_fail` for the next lesson, then a cell that starts with `%%course ex_fail`." in said
    assert "course check" not in said
