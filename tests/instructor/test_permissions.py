"""Files others can read: what is meant for people and other programs gets the usual permissions (the
umask's); only private state stays 0600, and PrairieLearn's results are readable by any user."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from class_helpers import class_course, write_folder
from course.cli import app
from course.files import write_atomic
from course.instructor import prairielearn, release
from course.registry import load_course


@pytest.fixture
def umask() -> Iterator[callable]:
    """Set the process's umask for the test; the one before is put back after."""
    before = os.umask(0o022)
    os.umask(before)
    yield os.umask
    os.umask(before)


def _mode(path: Path) -> int:
    """The permission bits of `path`."""
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o077])
def test_the_atomic_writer_follows_the_umask_and_keeps_private_files_private(tmp_path: Path, umask, mask: int) -> None:
    """A shared file is 0666 less the umask; a private one 0600 whatever the umask; `mode` is exact;
    `keep_mode` keeps the replaced file's; no temporary file is left beside it."""
    umask(mask)
    write_atomic(tmp_path / "shared.csv", "a,b\n")
    write_atomic(tmp_path / "progress.json", "{}", private=True)
    write_atomic(tmp_path / "results.json", "{}", mode=0o644)
    assert _mode(tmp_path / "shared.csv") == 0o666 & ~mask
    assert _mode(tmp_path / "progress.json") == 0o600 and _mode(tmp_path / "results.json") == 0o644
    os.chmod(tmp_path / "shared.csv", 0o640)
    write_atomic(tmp_path / "shared.csv", "a,b,c\n", keep_mode=True)
    assert _mode(tmp_path / "shared.csv") == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["progress.json", "results.json", "shared.csv"]


def test_a_graded_class_is_readable_by_others_and_its_state_is_not(tmp_path: Path, cli: CliRunner, umask) -> None:
    """gradebook.csv, summary.json, report.html and each results.json are 0644 under umask 022;
    the run's own state (.grading.json) is 0600. (A class that tried nothing: no grading runs.)"""
    umask(0o022)
    course, subs, out = class_course(tmp_path), tmp_path / "subs", tmp_path / "out"
    write_folder(subs / "ada", {"notes.txt": "nothing yet"})
    write_folder(subs / "alan", {"notes.txt": "nothing yet"})
    done = cli.invoke(app, ["grade", str(subs), "--out", str(out), "--course", str(course), "--json"])
    assert done.exit_code == 0, done.output
    shared = [out / "gradebook.csv", out / "summary.json", out / "report.html", out / "ada" / "results.json",
              out / "alan" / "results.json"]
    assert {p.name: _mode(p) for p in shared} == {p.name: 0o644 for p in shared}
    assert _mode(out / ".grading.json") == 0o600


def test_a_release_and_its_readme_are_readable_by_others(tmp_path: Path, umask) -> None:
    """Every file of the students' copy, the README and course.toml written here included, is 0644 under 022."""
    umask(0o022)
    root = class_course(tmp_path)
    (root / "README.md").write_text("# Class course\n", encoding="utf-8")  # the release writes its own for students
    found = load_course(root)
    made = release.release(found, tmp_path / "release", git=False)
    written = {p.relative_to(tmp_path / "release").as_posix() for p in made}
    assert {"README.md", "course.toml"} <= written
    assert {rel: _mode(tmp_path / "release" / rel) & 0o044 for rel in written} == {rel: 0o044 for rel in written}


def test_prairielearn_results_are_readable_by_the_grader_hosts_user(tmp_path: Path, umask) -> None:
    """Under the strictest umask, results.json is 0644 in a folder others may enter: PrairieLearn's grader
    host, reading as another user than the container's, can read it. (Nothing to grade: no grading runs.)"""
    umask(0o077)
    course = class_course(tmp_path)
    (tmp_path / "student").mkdir()
    results = tmp_path / "grade" / "results" / "results.json"
    code = prairielearn.grade_question(course, tmp_path / "student", "ex_pass", results)
    assert code == 0 and json.loads(results.read_text(encoding="utf-8"))["gradable"] is False
    assert _mode(results) == 0o644 and _mode(results.parent) & 0o055 == 0o055
