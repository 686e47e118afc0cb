"""The Gradescope figures in the docs and in `course autograder gradescope` come from a run of the benchmark, never by
hand: `benchmarks/gradescope.json` is what `bench_gradescope.py` measured, and the docs' blocks are written from it."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

from course.instructor import budget
from course.instructor.results import max_points
from course.registry import load_course

REPO = Path(__file__).resolve().parents[2]


def _figures() -> ModuleType:
    """`benchmarks/gradescope_figures.py`, loaded by path (the benchmarks are scripts, not a package)."""
    spec = importlib.util.spec_from_file_location("gradescope_figures", REPO / "benchmarks" / "gradescope_figures.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(score: float, top: float, wall: float, stopped: int, exercises: list[dict]) -> dict:
    return {"wall_s": wall, "score": score, "max_score": top, "cpu_s": wall / 2, "peak_mb": 400, "oom_kills": 0,
            "checks_stopped_by_budget": stopped, "load_average_before": 3.0, "exercises": exercises}


def test_the_docs_hold_what_the_benchmark_measured() -> None:
    """Each block of figures in docs/grading.md and benchmarks/README.md is what the kept measurement says."""
    assert _figures().main(["--check"]) == 0, "run `python benchmarks/gradescope_figures.py` (or the benchmark)"


def test_the_figures_follow_the_run_not_the_text() -> None:
    """A run of a course worth 300 points, whose looping submission had one exercise stopped by its own limit, the
    rest by the budget, and one keeping a point: the block says exactly that."""
    looping = [{"name": "first", "status": "timeout", "score": 0.0, "max_score": 10.0, "duration_s": 131.0,
                "stopped": "limit"},
               *({"name": f"ex{i}", "status": "timeout", "score": 0.0, "max_score": 10.0, "duration_s": 13.0 + i,
                  "stopped": "budget"} for i in range(28)),
               {"name": "last", "status": "timeout", "score": 1.0, "max_score": 10.0, "duration_s": 12.0,
                "stopped": "budget"}]
    data = {"budget_s": 480, "memory_mb": 768, "measured": "2027-01-01",
            "runs": {"correct": _run(300.0, 300.0, 120.0, 0, []), "looping": _run(1.0, 300.0, 481.0, 29, looping)}}
    docs, readme = (" ".join(_figures().block(data, doc).split()) for doc in ("docs", "readme"))  # prose is wrapped
    assert "| 300 of 300 |" in docs and "| 1 of 300 |" in docs and "275" not in docs
    assert "`first` stopped at its own limit (131 s of wall-clock time)" in docs
    assert "29 exercises stopped by the budget, after 26.0 s each" in docs and "`last` kept 1 point" in docs
    assert "29 checks, one per exercise its own limit did not stop" in docs
    assert "worth 300 points" in readme and "| peak memory of the container | 400 MiB | < 768 MiB: meets |" in readme


def test_the_bundle_says_when_its_figures_are_of_an_earlier_course() -> None:
    """`course autograder gradescope` prints the figures measured of this course, and says when they were measured
    while it was worth other points (checks added since): they are then to be measured again."""
    course = load_course(REPO)
    now = sum(max_points(e) for e in course.exercises)
    kept = json.loads((REPO / "benchmarks" / "gradescope.json").read_text(encoding="utf-8"))
    then = {run["max_score"] for run in kept["runs"].values()}
    said = budget.measured(REPO, course.meta.title, now)
    assert said[0].startswith("Measured at 0.5 CPU and 768 MiB")
    assert (len(said) == 2) == (then != {now}), said
    later = budget.measured(REPO, course.meta.title, now + 7)
    assert f"worth {now + 7:g} now" in later[-1] and "bench_gradescope.py" in later[-1]
