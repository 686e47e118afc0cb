"""Helpers for the class-grading tests: a two-exercise course, a synthetic class, Gradescope's fields."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path
from typing import Any

MINI = Path(__file__).parent / "fixtures" / "mini_course"
SOLUTION = (MINI / "solutions" / "01_ex_pass" / "ex_pass.py").read_text(encoding="utf-8")
WRONG = (MINI / "solutions" / "02_ex_fail" / "wrong" / "add_one.py").read_text(encoding="utf-8")
MAX_TOTAL = 8.0  # ex_pass: 1 + 2 points; ex_fail: 1 + 2, and 2 hidden
TEST_FIELDS = {"name", "number", "score", "max_score", "status", "output", "visibility", "tags"}


def class_course(root: Path) -> Path:
    """A course of two exercises from the mini-course: `ex_pass` and `ex_fail` (which has hidden checks)."""
    course = root / "course"
    for top in ("exercises", "graders", "solutions"):
        for folder in ("01_ex_pass", "02_ex_fail"):
            shutil.copytree(MINI / top / folder, course / top / folder)
    (course / "course.toml").write_text(
        'format_version = 1\ntitle = "Class course"\nexercises = ["ex_pass", "ex_fail"]\n', encoding="utf-8"
    )
    return course


def write_zip(path: Path, files: dict[str, str]) -> Path:
    """A zip holding `files` (member name -> text)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return path


def write_folder(path: Path, files: dict[str, str]) -> Path:
    """A folder holding `files` (relative path -> text)."""
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text, encoding="utf-8")
    path.mkdir(parents=True, exist_ok=True)
    return path


def honest_class(subs: Path) -> dict[str, float]:
    """Four students, zipped and loose, workspaces and loose files; returns each one's expected total."""
    write_folder(subs / "alice", {"exercises/01_ex_pass/ex_pass.py": SOLUTION,
                                  "exercises/02_ex_fail/ex_fail.py": SOLUTION})
    write_zip(subs / "bob.zip", {"upload/ex_pass.py": WRONG, "ex_fail.py": SOLUTION})
    write_folder(subs / "carol", {"notes.txt": "I did not get to it."})
    write_zip(subs / "dave.zip", {"dave-main/exercises/02_ex_fail/ex_fail.py": WRONG,
                                  "dave-main/.venv/ex_pass.py": SOLUTION})
    return {"alice": 8.0, "bob": 5.0, "carol": 0.0, "dave": 0.0}


def assert_gradescope(results: dict[str, Any], student: str) -> None:
    """`results` has every field of Gradescope's format that the issue names, each of the right kind."""
    assert isinstance(results["score"], int | float) and isinstance(results["execution_time"], int | float)
    assert isinstance(results["output"], str) and results["output"]
    assert results["tests"], results
    for test in results["tests"]:
        assert set(test) >= TEST_FIELDS, test
        assert test["status"] in ("passed", "failed") and 0 <= test["score"] <= test["max_score"]
        assert isinstance(test["number"], str) and test["visibility"] in ("visible", "after_published")
        assert len(test["tags"]) == 2 and all(isinstance(t, str) for t in test["tags"])
    assert results["score"] == sum(t["score"] for t in results["tests"])
    extra = results["extra_data"]
    assert extra["student"] == student and extra["course"] == "Class course" and extra["jax_version"]
    assert isinstance(extra["seed"], int) and set(extra["graders"]) == {"ex_pass", "ex_fail"}
    assert all(len(h) == 16 for h in extra["graders"].values())
