"""The same score on every regrade: a graded run's seed is the course's, never drawn per run."""

from __future__ import annotations

import json
import tomllib
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from class_helpers import SOLUTION, WRONG, class_course, write_folder
from course.cli import app
from course.errors import RegistryError
from course.instructor import autograder, release, state
from course.registry import load_course


def _grade(cli: CliRunner, course: Path, subs: Path, out: Path, *args: str) -> dict:
    """`course grade --json` in-process; the summary (the run must grade everyone)."""
    done = cli.invoke(app, ["grade", str(subs), "--out", str(out), "--course", str(course), "--json", *args])
    assert done.exit_code == 0, done.output
    return json.loads(done.stdout)


def _results(out: Path, student: str) -> dict:
    """A student's results without what measures time, which no two runs share."""
    data = json.loads((out / student / "results.json").read_text(encoding="utf-8"))
    data.pop("execution_time")
    data["extra_data"].pop("graded_at", None)
    for rec in data["extra_data"]["exercises"].values():
        rec.pop("duration_s")
    return data


@pytest.mark.slow
def test_two_runs_of_a_class_give_the_same_gradebook_under_the_courses_seed(tmp_path: Path, cli: CliRunner) -> None:
    """Two `course grade` runs into fresh folders, and a `--regrade`, agree byte for byte on the gradebook
    and on every student's results (timings aside); all use the course's seed; `--seed` overrides it."""
    course, subs = class_course(tmp_path), tmp_path / "subs"
    write_folder(subs / "ada", {"ex_pass.py": SOLUTION, "ex_fail.py": WRONG})
    write_folder(subs / "alan", {"ex_pass.py": WRONG})
    first = _grade(cli, course, subs, tmp_path / "one")
    second = _grade(cli, course, subs, tmp_path / "two")
    again = _grade(cli, course, subs, tmp_path / "one", "--regrade")
    seed = state.course_seed(load_course(course))
    assert first["seed"] == second["seed"] == again["seed"] == seed
    gradebook = (tmp_path / "one" / "gradebook.csv").read_bytes()
    assert gradebook == (tmp_path / "two" / "gradebook.csv").read_bytes()
    for student in ("ada", "alan"):
        assert _results(tmp_path / "one", student) == _results(tmp_path / "two", student)
        assert _results(tmp_path / "one", student)["extra_data"]["seed"] == seed
    assert _grade(cli, course, subs, tmp_path / "three", "--seed", "7")["seed"] == 7
    assert _grade(cli, course, subs, tmp_path / "three")["seed"] == 7  # the folder keeps the seed it was graded with


def test_the_course_sets_the_seed_or_derives_it_from_what_students_never_see(tmp_path: Path) -> None:
    """`seed` in course.toml wins; without it the seed follows the title and the hidden checks, not the run."""
    root = class_course(tmp_path)
    derived = state.course_seed(load_course(root))
    assert derived == state.course_seed(load_course(root))
    hidden = next(root.glob("graders/*/hidden/*.py"))
    hidden.write_text(hidden.read_text(encoding="utf-8") + "\n# another hidden check's comment\n", encoding="utf-8")
    assert state.course_seed(load_course(root)) != derived
    toml = root / "course.toml"
    toml.write_text("seed = 2027\n" + toml.read_text(encoding="utf-8"), encoding="utf-8")
    assert state.course_seed(load_course(root)) == 2027
    assert state.load(tmp_path / "out", None, load_course(root))["seed"] == 2027
    assert state.load(tmp_path / "other", 5, load_course(root))["seed"] == 5
    toml.write_text(toml.read_text(encoding="utf-8").replace("2027", "-1"), encoding="utf-8")
    with pytest.raises(RegistryError, match="seed"):
        load_course(root)


def test_the_students_copy_leaves_the_seed_out_and_the_bundles_write_it_in(tmp_path: Path) -> None:
    """`course release` drops `seed` from course.toml; Gradescope's and PrairieLearn's copies carry the
    course's seed, set or derived, so the platform grades with it."""
    root = class_course(tmp_path)
    toml = root / "course.toml"
    toml.write_text("# the class of 2027\nseed = 2027\n" + toml.read_text(encoding="utf-8"), encoding="utf-8")
    found = load_course(root)
    assert "seed" not in tomllib.loads(release.files(found)[Path("course.toml")].decode())
    with zipfile.ZipFile(autograder.gradescope(found, tmp_path / "autograder.zip")) as archive:
        bundled = tomllib.loads(archive.read("course/course.toml").decode())
    assert bundled["seed"] == 2027 and bundled["exercises"] == found.meta.exercises
    toml.write_text(toml.read_text(encoding="utf-8").replace("seed = 2027\n", ""), encoding="utf-8")
    found = load_course(root)
    bundled = tomllib.loads(release.files(found, hidden=True)[Path("course.toml")].decode())
    assert bundled["seed"] == state.course_seed(found)
    copy = tmp_path / "copy"
    for rel, source in release.files(found, hidden=True).items():
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        (copy / rel).write_bytes(source if isinstance(source, bytes) else source.read_bytes())
    assert state.course_seed(load_course(copy)) == state.course_seed(found)  # without the solutions, the same
