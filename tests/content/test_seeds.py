"""A verdict never depends on the seed: each wrong variant and each alternative gets one verdict under many seeds.

Grading every file of the course under 20 seeds takes far longer than the suite may, so this test is
selected only on request: `pytest -m seeds` (all exercises, 20 seeds). `COURSE_SEEDS=N` sets the number
of seeds and `COURSE_SEED_EXERCISES=a,b` limits it to some exercises, for an author at work on a grader.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from course.engine.parent.runner import grade_many, start_worker
from course.instructor import checks
from course.registry import Exercise, load_course

REPO = Path(__file__).resolve().parents[2]
ALTERNATIVES = Path(__file__).parent / "alternatives"


def _seeds() -> list[int]:
    """The seeds to grade under: a fixed list, so a failure names seeds one can repeat with `--seed`."""
    n = int(os.environ.get("COURSE_SEEDS", "20"))
    return random.Random(20261201).sample(range(2**31), n)


def _files(exercise: Exercise) -> list[tuple[str, Path]]:
    """(label, file) for every wrong variant and every alternative of `exercise`."""
    wrong = [(f"wrong/{p.stem}", p) for p in checks.wrong_variants(exercise)]
    alternatives = sorted((ALTERNATIVES / exercise.name).glob("*.py"))
    return wrong + [(f"alternative/{p.stem}", p) for p in alternatives]


def _signature(result: object) -> tuple[str, tuple[str, ...]]:
    """What must not change with the seed: the status and which checks failed."""
    failing = tuple(sorted(c.id for c in result.checks if c.status != "passed"))  # type: ignore[attr-defined]
    return result.status, failing  # type: ignore[attr-defined]


@pytest.mark.seeds
def test_one_verdict_under_every_seed(tmp_path: Path) -> None:
    """Every wrong variant and every alternative gets the same status and failing checks under each seed."""
    course = load_course(REPO)
    wanted = {n for n in os.environ.get("COURSE_SEED_EXERCISES", "").split(",") if n}
    exercises = [e for e in course.exercises if not wanted or e.name in wanted]
    pairs, labels = [], []
    for exercise in exercises:
        for label, path in _files(exercise):
            dest = tmp_path / exercise.name / label.replace("/", "_") / exercise.stub_rel
            dest.parent.mkdir(parents=True)
            dest.write_bytes(path.read_bytes())
            pairs.append((exercise, dest))
            labels.append(f"{exercise.name}/{label}")
    seen: dict[str, dict[tuple[str, tuple[str, ...]], list[int]]] = {label: {} for label in labels}
    # One compilation cache for the run, as `course validate` keeps: the grader's own programs are
    # the same under every seed, and compile events fire on a cache hit too.
    cache = tmp_path / "compilation-cache"
    cache.mkdir()
    worker = start_worker(cache)
    try:
        for seed in _seeds():
            results = grade_many(pairs, jobs=2, seed=seed, worker=worker, cache_dir=cache)
            for label, result in zip(labels, results, strict=True):
                seen[label].setdefault(_signature(result), []).append(seed)
    finally:
        if worker is not None:
            worker.close()
    unstable = {label: verdicts for label, verdicts in seen.items() if len(verdicts) > 1}
    assert not unstable, unstable
