"""`course new`: scaffolds an exercise that loads, registers it without disturbing course.toml, refuses clashes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from course import stubs
from course.cli import app
from course.errors import RegistryError, UsageError
from course.instructor import checks as layout
from course.instructor.scaffold import PLACEHOLDER, append_exercise, new_exercise
from course.instructor.validate import validate
from course.registry import load_course

MINI = Path(__file__).parents[1] / "fixtures" / "mini_course"
COURSE_TOML = """# The registry: comments must survive `course new`.
format_version = 1
title = "Small"
exercises = [
    "ex_fail",  # the first one
]
welcome = "hi"
"""


@pytest.fixture
def small(tmp_path: Path) -> Path:
    """A course with the mini-course's `ex_fail` only, and a course.toml with comments."""
    root = tmp_path / "course"
    for top in ("exercises", "graders", "solutions"):
        shutil.copytree(MINI / top / "02_ex_fail", root / top / "01_ex_fail")
    (root / "course.toml").write_text(COURSE_TOML, encoding="utf-8")
    return root


def test_new_scaffolds_and_registers(small: Path) -> None:
    """Every file is made at position 02 and the name is appended with comments kept."""
    made = new_exercise(load_course(small), "scan_sum", "compiles")
    rel = sorted(str(p.relative_to(small)) for p in made)
    assert rel == [
        "course.toml",
        "exercises/02_scan_sum/README.md",
        "exercises/02_scan_sum/exercise.toml",
        "exercises/02_scan_sum/scan_sum.py",
        "exercises/stubs.lock",
        "graders/02_scan_sum/test_scan_sum.py",
        "solutions/02_scan_sum/scan_sum.py",
        "solutions/02_scan_sum/wrong/.gitkeep",
    ]
    text = (small / "course.toml").read_text()
    assert text == COURSE_TOML.replace(
        '    "ex_fail",  # the first one\n', '    "ex_fail",  # the first one\n    "scan_sum",\n'
    )
    exercise = load_course(small).get("scan_sum")
    assert (exercise.position, exercise.meta.topic, exercise.meta.timeout_s) == (2, "compiles", 60)
    assert all(p.is_file() for p in (exercise.stub_path, exercise.grader_path, exercise.solution_path))
    assert stubs.recorded(small) == {"scan_sum": stubs.fingerprint(exercise.stub_path.read_bytes())}


def test_scaffold_is_flagged_until_filled_in(small: Path) -> None:
    """The metadata loads and the layout is clean, but placeholders are flagged and the solution fails."""
    new_exercise(load_course(small), "scan_sum", "compiles")
    course = load_course(small)
    static = layout.static_problems(course.get("scan_sum"))
    assert len(static) == 3 and all("placeholder" in p for p in static), static
    assert layout.folder_problems(course) == []
    report = validate(course, ["scan_sum"], jobs=2)
    (ex,) = report.exercises
    assert (ex.stub.text, ex.solution.text, ex.wrong.text) == ("✓ fails", "✗ fails 1/1", "none"), ex
    assert any("solutions/02_scan_sum/scan_sum.py fails test_values" in p for p in ex.problems), ex.problems
    assert report.exit_code == 1


@pytest.mark.parametrize(
    ("name", "why"),
    [("Bad-Name", "not a valid exercise name"), ("x" * 41, "not a valid exercise name"), ("ex_fail", "already in")],
)
def test_new_refuses_bad_or_taken_names(small: Path, name: str, why: str) -> None:
    """An invalid or taken name is one sentence, and nothing is written."""
    before = (small / "course.toml").read_text()
    with pytest.raises(UsageError, match=why):
        new_exercise(load_course(small), name, "t")
    assert (small / "course.toml").read_text() == before
    assert sorted(p.name for p in (small / "exercises").iterdir()) == ["01_ex_fail"]


def test_new_refuses_an_existing_folder(small: Path) -> None:
    """A leftover folder at the new position is never overwritten."""
    (small / "graders" / "02_scan_sum").mkdir()
    with pytest.raises(UsageError, match="graders/02_scan_sum already exists"):
        new_exercise(load_course(small), "scan_sum", "t")
    assert not (small / "exercises" / "02_scan_sum").exists()
    assert "scan_sum" not in (small / "course.toml").read_text()


def test_cli_new(small: Path) -> None:
    """`course new NAME --topic T` lists what it made; a bad name exits 2."""
    env = {"COURSE_ROOT": None, "COURSE_WORKSPACE": None, "COURSE_DEBUG": None}
    runner = CliRunner()
    result = runner.invoke(app, ["new", "scan_sum", "--topic", "compiles", "--course", str(small)], env=env)
    assert result.exit_code == 0, result.output
    assert "exercises/02_scan_sum/scan_sum.py" in result.output and "course validate scan_sum" in result.output
    result = runner.invoke(app, ["new", "Nope!", "--topic", "x", "--course", str(small)], env=env)
    assert result.exit_code == 2, result.output
    assert "not a valid exercise name" in result.output
    result = runner.invoke(app, ["new", "no_topic", "--course", str(small)], env=env)
    assert result.exit_code == 2, result.output


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ('exercises = ["a", "b"]\n', 'exercises = ["a", "b", "n"]\n'),
        ("exercises = []\n", 'exercises = ["n"]\n'),
        ("exercises = ['a',]\n", "exercises = ['a', \"n\",]\n"),
        ('exercises = [\n  "a",  # one ] two\n]\n', 'exercises = [\n  "a",  # one ] two\n  "n",\n]\n'),
        ('exercises = [\n  "a"\n]\n[x]\nexercises = 1\n', 'exercises = [\n  "a",\n  "n"\n]\n[x]\nexercises = 1\n'),
    ],
)
def test_append_exercise_keeps_the_style(before: str, after: str) -> None:
    """The name goes at the end of the top-level list, in the list's own layout."""
    assert append_exercise('title = "t"\n' + before, "n", Path("course.toml")) == 'title = "t"\n' + after


@pytest.mark.parametrize("text", ['title = "t"\n', 'title = "t"\nexercises = ["a"\n'])
def test_append_exercise_refuses_what_it_cannot_edit(text: str) -> None:
    """No list, or an unclosed one, is a RegistryError rather than a guess."""
    with pytest.raises(RegistryError):
        append_exercise(text, "n", Path("course.toml"))


def test_placeholder_marks_every_scaffolded_text(small: Path) -> None:
    """The lesson, hints, grader and solution all carry the marker validate looks for."""
    made = new_exercise(load_course(small), "scan_sum", "compiles")
    marked = {p.name for p in made if PLACEHOLDER in p.read_text()}
    assert marked == {"README.md", "exercise.toml", "scan_sum.py", "test_scan_sum.py"}


def test_new_hidden_scaffolds_hidden_checks_that_stay_red(small: Path) -> None:
    """`course new NAME --topic T --hidden` adds the hidden grader; validate flags it until it is written."""
    made = new_exercise(load_course(small), "scan_sum", "compiles", hidden=True)
    hidden = small / "graders" / "02_scan_sum" / "hidden" / "test_scan_sum_hidden.py"
    assert hidden in made and PLACEHOLDER in hidden.read_text(encoding="utf-8")
    course = load_course(small)
    exercise = course.get("scan_sum")
    assert exercise.hidden_grader_path == hidden and exercise.hidden_max_score == 1.0
    assert not any("hidden" in p for p in layout.static_problems(exercise))  # the hidden folder is not stray


def test_cli_new_hidden_for_an_existing_exercise(small: Path) -> None:
    """`course new NAME --hidden` on an exercise that has none adds them; a second time is refused."""
    runner = CliRunner()
    (small / "graders" / "01_ex_fail" / "hidden" / "test_ex_fail_hidden.py").unlink()
    done = runner.invoke(app, ["new", "ex_fail", "--hidden", "--course", str(small)])
    assert done.exit_code == 0, done.output
    assert "graders/01_ex_fail/hidden/test_ex_fail_hidden.py" in done.output
    report = validate(load_course(small), ["ex_fail"], jobs=2)
    assert any("fails test_hidden_rule" in p for p in report.exercises[0].problems), report.exercises[0].problems
    again = runner.invoke(app, ["new", "ex_fail", "--hidden", "--course", str(small)])
    assert again.exit_code == 2 and "already exists" in again.output
    missing = runner.invoke(app, ["new", "brand_new", "--course", str(small)])
    assert missing.exit_code == 2 and "give the new exercise a topic" in missing.output
