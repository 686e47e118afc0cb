"""Helpers for the class-grading tests: a two-exercise course, a synthetic class, Gradescope's documented fields."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path
from typing import Any

MINI = Path(__file__).parent / "fixtures" / "mini_course"
SOLUTION = (MINI / "solutions" / "01_ex_pass" / "ex_pass.py").read_text(encoding="utf-8")
WRONG = (MINI / "solutions" / "02_ex_fail" / "wrong" / "add_one.py").read_text(encoding="utf-8")
STUB = 'def double(x):\n    """Return twice x."""\n    raise NotImplementedError("double")\n'
"""The stub `ex_pass` hands out here (the mini-course's own is already solved, which no class's stub is)."""
MAX_TOTAL = 8.0  # ex_pass: 1 + 2 points; ex_fail: 1 + 2, and 2 hidden
TEST_FIELDS = {"name", "number", "score", "max_score", "status", "output", "visibility", "tags"}

# Gradescope's results format, field by field, as its "Autograder Specifications" document it.
VISIBILITY = {"hidden", "after_due_date", "after_published", "visible"}
FORMATS = {"text", "html", "simple_format", "md", "ansi"}
TOP_LEVEL = {"score": (int, float), "execution_time": (int, float), "output": str, "output_format": str,
             "test_output_format": str, "test_name_format": str, "visibility": str, "stdout_visibility": str,
             "extra_data": dict, "tests": list, "leaderboard": list}
PER_TEST = {"score": (int, float), "max_score": (int, float), "status": str, "name": str, "name_format": str,
            "number": str, "output": str, "output_format": str, "tags": list, "visibility": str, "extra_data": dict}


def class_course(root: Path) -> Path:
    """A course of two exercises from the mini-course: `ex_pass` and `ex_fail` (which has hidden checks)."""
    course = root / "course"
    for top in ("exercises", "graders", "solutions"):
        for folder in ("01_ex_pass", "02_ex_fail"):
            shutil.copytree(MINI / top / folder, course / top / folder)
    (course / "exercises" / "01_ex_pass" / "ex_pass.py").write_text(STUB, encoding="utf-8")
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


def assert_documented(results: dict[str, Any]) -> None:
    """Every field of `results` is one Gradescope documents, of the documented kind and values."""
    assert set(results) <= set(TOP_LEVEL), set(results) - set(TOP_LEVEL)
    assert "score" in results or all("score" in t for t in results.get("tests", []))
    for key, kind in TOP_LEVEL.items():
        assert key not in results or isinstance(results[key], kind), (key, results[key])
    for key in ("visibility", "stdout_visibility"):
        assert results.get(key, "visible") in VISIBILITY, results[key]
    for key in ("output_format", "test_output_format", "test_name_format"):
        assert results.get(key, "text") in FORMATS, results[key]
    for test in results.get("tests", []):
        assert set(test) <= set(PER_TEST), set(test) - set(PER_TEST)
        for key, kind in PER_TEST.items():
            assert key not in test or isinstance(test[key], kind), (key, test[key])
        assert test.get("status", "passed") in ("passed", "failed") and test.get("visibility", "visible") in VISIBILITY
        assert all(isinstance(tag, str) for tag in test.get("tags", []))


def assert_gradescope(results: dict[str, Any], student: str) -> None:
    """`results` has Gradescope's documented fields, each of the right kind, and what our grading adds."""
    assert_documented(results)
    assert isinstance(results["score"], int | float) and isinstance(results["execution_time"], int | float)
    assert isinstance(results["output"], str) and results["output"]
    assert results["tests"] and results["stdout_visibility"] == "hidden", results
    for test in results["tests"]:
        assert set(test) >= TEST_FIELDS, test
        assert 0 <= test["score"] <= test["max_score"]
        assert test["visibility"] in ("visible", "after_published") and len(test["tags"]) == 2
    assert results["score"] == sum(t["score"] for t in results["tests"])
    extra = results["extra_data"]
    assert extra["student"] == student and extra["course"] == "Class course" and extra["jax_version"]
    assert isinstance(extra["seed"], int) and set(extra["graders"]) == {"ex_pass", "ex_fail"}
    assert all(len(h) == 16 for h in extra["graders"].values())


def assert_hides_hidden(results: dict[str, Any]) -> None:
    """The always-visible output never counts, names or scores a hidden check: it is what the visible
    tests alone say, and no visible test names a hidden check."""
    hidden = [t for t in results["tests"] if t["visibility"] != "visible"]
    records = results["extra_data"]["exercises"]
    hidden_titles = [c["title"] for r in records.values() for c in r["checks"] if c.get("hidden")]
    hidden_ids = [c["id"] for r in records.values() for c in r["checks"] if c.get("hidden")]
    for word in [*hidden_titles, *hidden_ids, "hidden"]:
        assert word not in results["output"], (word, results["output"])
    visible = [t for t in results["tests"] if t["visibility"] == "visible"]
    for name in records:
        shown = [t for t in visible if t["tags"][0] == name]
        score, top = sum(t["score"] for t in shown), sum(t["max_score"] for t in shown)
        line = next(line for line in results["output"].splitlines() if line.startswith(f"{name}:"))
        assert f"{score:g}/{top:g}" in line, (line, shown)
    assert all(t["name"] not in " ".join(v["name"] for v in visible) for t in hidden)


def synthetic_run(course_root: Path, students: int, seed: int = 3) -> Any:
    """A graded class made up for the report's layout: each student's record of every exercise of the course
    at `course_root` drawn at random (passed, failed with a message, timed out, too large, not tried)."""
    import random

    from course.engine.contain.protections import Protections
    from course.instructor.classrun import ClassRun, Student
    from course.instructor.results import Record, max_points
    from course.instructor.submissions import Entry
    from course.registry import load_course

    rng = random.Random(seed)
    course = load_course(course_root)
    run = ClassRun(course, course_root, course.exercises, seed, Protections(network_namespace=True, landlock_abi=6))
    for k in range(students):
        records = {}
        for exercise in course.exercises:
            top = max_points(exercise)
            checks = [{"id": f"test_{i}", "title": f"check {i} of {exercise.name}: the rule it holds the code to",
                       "status": rng.choice(["passed", "passed", "failed"]), "score": 0.0, "max_score": 1.0,
                       "message": "", "hidden": i == 3} for i in range(4)]
            for check in checks:
                check["score"] = 1.0 if check["status"] == "passed" else 0.0
                check["message"] = "" if check["score"] else f"expected {k} but got {k + 1} <b>escaped</b>"
            pick = rng.random()
            status = "passed" if all(c["score"] for c in checks) else "failed"
            rec = Record(exercise.name, status, sum(c["score"] for c in checks) * top / 4, top, "", "x.py",
                         checks=checks)
            if pick < 0.1:
                rec = Record(exercise.name, "not_tried", 0.0, top, "not tried: no file was submitted")
            elif pick < 0.15:
                rec = Record(exercise.name, "timeout", 0.0, top, "your code ran past the 60 s limit",
                             checks=[{**c, "status": "failed", "score": 0.0} for c in checks])
            elif pick < 0.17:
                rec = Record(exercise.name, "failed", 0.0, top, "x.py is 2000000 bytes, over the limit; not graded",
                             "x.py", cause="too_large")
            records[exercise.name] = rec
        name = f"student{k:03d}-with-a-longer-id" if k % 7 == 0 else f"student{k:03d}"
        run.students.append(Student(Entry(name, (), name, "Ada Lovelace" if k % 5 == 0 else ""), records))
    return run
