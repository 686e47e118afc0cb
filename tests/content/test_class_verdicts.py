"""Sandboxed class grading gives the course's verdicts: each reference passes, each wrong variant fails its check.

`course validate` proves the graders on the instructor's machine without a sandbox. Here the same
files are handed in as a class, one student per file, and graded through the real `course grade`,
in its sandbox (a private copy, the namespace and Landlock, a private loopback for exercises in
several processes). It grades many files, so it runs only on request: `pytest -m classwide`.
`COURSE_CLASS_EXERCISES=a,b` picks the exercises (default: Part 6, exercises 21 to 25).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from course.instructor import checks
from course.registry import load_course

REPO = Path(__file__).resolve().parents[2]
COURSE_BIN = Path(sys.executable).with_name("course")
PART_6 = ("fsdp_step", "tensor_parallel_mlp", "collective_matmul", "pipeline_stages", "multi_process")


@pytest.mark.classwide
def test_class_grading_gives_the_validated_verdicts(tmp_path: Path) -> None:
    """Every reference passes every check; every wrong variant fails, and fails the check it names."""
    course = load_course(REPO)
    wanted = [n for n in os.environ.get("COURSE_CLASS_EXERCISES", "").split(",") if n] or list(PART_6)
    subs, expected = tmp_path / "subs", {}
    for name in wanted:
        exercise = course.get(name)
        files = [("reference", exercise.solution_path)] + [(p.stem, p) for p in checks.wrong_variants(exercise)]
        for label, path in files:
            student = f"{name}--{label}"
            target = subs / student / exercise.stub_rel
            target.parent.mkdir(parents=True)
            target.write_bytes(path.read_bytes())
            expected[student] = (name, None if label == "reference" else checks.named_check(path))
    out = tmp_path / "out"
    done = subprocess.run([str(COURSE_BIN), "grade", str(subs), "--out", str(out), "--course", str(REPO), "--json",
                           "--only", ",".join(wanted), "--jobs", "2"], capture_output=True, text=True, timeout=7200,
                          check=False)
    summary = json.loads(done.stdout)
    assert summary["isolation"]["landlock_files"] or not sys.platform.startswith("linux"), summary["isolation"]
    wrong = {}
    for student, (name, must_fail) in expected.items():
        results = json.loads((out / student / "results.json").read_text(encoding="utf-8"))
        mine = [t for t in results["tests"] if name in t.get("tags", [])]
        failing = {t["extra_data"]["check"] for t in mine if t.get("status") != "passed"}
        ok = bool(mine) and (not failing if must_fail is None else must_fail in failing)
        if not ok:
            wrong[student] = sorted(failing)[:4]
    assert not wrong, wrong
