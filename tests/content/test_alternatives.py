"""Graders accept every correct solution: alternative styles written apart from the reference pass.

The suite grades the first SAMPLE alternatives of each exercise (by file name), which keeps it within
its time on two cores; `COURSE_ALTERNATIVES=all pytest tests/content/test_alternatives.py` grades every
one, and the seed test (`pytest -m seeds`) grades every one under 20 seeds.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from course.engine.parent.runner import grade_many, start_worker
from course.registry import load_course

if TYPE_CHECKING:
    from course.engine.parent.worker import Worker

REPO = Path(__file__).resolve().parents[2]
ALTERNATIVES = Path(__file__).parent / "alternatives"
SAMPLE = 3


def _cases() -> list[tuple[str, Path]]:
    """(exercise name, alternative file) for every file under alternatives/NAME/."""
    return sorted((d.name, f) for d in ALTERNATIVES.iterdir() if d.is_dir() for f in d.glob("*.py"))


def test_every_exercise_has_three_alternatives() -> None:
    """Each exercise of the course ships at least three alternative correct solutions."""
    course = load_course(REPO)
    counts = {name: 0 for name in course.meta.exercises}
    for name, _ in _cases():
        counts[name] = counts.get(name, 0) + 1
    assert all(n >= 3 for n in counts.values()), counts


def _graded_cases() -> list[tuple[str, Path]]:
    """The cases this run grades: every one with COURSE_ALTERNATIVES=all, else the first SAMPLE of each exercise."""
    cases = _cases()
    if os.environ.get("COURSE_ALTERNATIVES") == "all":
        return cases
    return [(name, path) for name, path in cases if [p for n, p in cases if n == name].index(path) < SAMPLE]


@pytest.fixture(scope="module")
def warm(shared_xla_cache: Path) -> Iterator[tuple[Worker | None, Path]]:
    """One warm worker and the run's compilation cache for every exercise's alternatives, as `course check --all`
    grades in a workspace: each cold start would import JAX anew, and each grader compile its reference again."""
    cache = shared_xla_cache
    worker = start_worker(cache)
    try:
        yield worker, cache
    finally:
        if worker is not None:
            worker.close()


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted({name for name, _ in _cases()}))
def test_alternatives_pass_every_check(name: str, warm: tuple[Worker | None, Path], tmp_path: Path) -> None:
    """Every alternative correct solution of the exercise graded in this run passes every check of it."""
    exercise = load_course(REPO).get(name)
    pairs = []
    for _, path in [case for case in _graded_cases() if case[0] == name]:
        dest = tmp_path / path.stem / exercise.stub_rel
        dest.parent.mkdir(parents=True)
        dest.write_bytes(path.read_bytes())
        pairs.append((exercise, dest))
    worker, cache = warm
    results = grade_many(pairs, jobs=2, worker=worker, cache_dir=cache)
    failures = {
        f"{r.name}/{p.parent.parent.parent.name}": [(c.id, c.message) for c in r.checks if c.status != "passed"]
        or r.message
        for (_, p), r in zip(pairs, results, strict=True)
        if not r.passed
    }
    assert pairs and not failures, failures


if not ALTERNATIVES.is_dir():  # pragma: no cover - the folder ships with the course
    pytest.fail("tests/content/alternatives is missing", pytrace=False)
