"""The CPU seconds each check of a correct solution needs, counted as one check's CPU limit counts them.

A check's limit (`check_timeout_s`, `course.engine.parent.stopwatch`) is CPU time of the process tree that
runs the learner's code, from the check's start to its end. This grades each exercise's reference
solution as `course check NAME` does (a cold process, an empty compilation cache: the most a check
ever pays), under BENCH_RUNS seeds (default 3), with a stopwatch that notes that CPU time at each
check's start and end and never stops a check. BENCH_ALTERNATIVES=1 grades every alternative
correct solution (`tests/content/alternatives/`) as well, and BENCH_WRONG=1 every known-wrong
variant (`solutions/NN_name/wrong/`), which must reach the check it fails, not a limit before it:
once each, cold as well (a warm worker, as `course check --all` and watch grade, needs less in the
first check: the figures of one solution of update_with_donate, cold and warm, were 1.09 and 0.30 s).
BENCH_ONLY=name,name limits the exercises; BENCH_WRITE=1 writes the
figures to BENCH_RECORD (default `benchmarks/check_cpu.json`; a run without alternatives or wrong
variants keeps their last figures), which the test of the budgets reads (`tests/engine/test_budgets.py`).
Printed: per exercise, its slowest check and what it needed, the slowest check of any alternative and
of any wrong variant, the budget now, and the budget over the reference's need.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import threading
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import Any, ClassVar

from _common import ROOT, RUNS, load_average

from course.engine.contain import limits
from course.engine.parent import cohort, runner
from course.engine.parent.stopwatch import Stopwatch
from course.engine.parent.verdict import ExerciseResult
from course.engine.wire.report import RUNNING
from course.registry import Exercise, load_course

RECORD = Path(os.environ.get("BENCH_RECORD", ROOT / "benchmarks" / "check_cpu.json"))
ALTERNATIVES = ROOT / "tests" / "content" / "alternatives"


class Recorder(Stopwatch):
    """A stopwatch that notes the CPU time of the learner's process tree at each check's start and end, and at
    its last reading; without a limit of its own unless `limited`. Every one made is kept in `made`, for the
    grading's caller to read."""

    made: ClassVar[list[Recorder]] = []
    limited: ClassVar[bool] = False
    lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, exercise: str, budget: limits.Budget, *args: Any, **kwargs: Any) -> None:
        super().__init__(exercise, budget if self.limited else replace(budget, check_cpu_s=0.0), *args, **kwargs)
        self.pid, self.last, self.at_stop = 0, 0.0, 0.0
        self.started: dict[str, float] = {}
        self.spent: dict[str, float] = {}
        read = self.cpu
        self.cpu = lambda pid: self._note(read(pid))
        with Recorder.lock:
            Recorder.made.append(self)

    def _note(self, used: float) -> float:
        """Keep the latest reading of the tree's CPU time."""
        self.last = max(self.last, used)
        return used

    def watch(self, pid: int) -> str:
        """Note the process to read, then watch it as any stopwatch does; when it stops a check, note the CPU
        seconds that check had used, from its start event on (`at_stop`)."""
        self.pid = pid
        said = super().watch(pid)
        if said and self.stopped is not None:
            self.at_stop = self.last - self.started.get(self.stopped.id, self._start_cpu or self.last)
        return said

    def raw_event(self, raw: dict) -> None:
        """Read the tree's CPU time at a check's start and at its end, then pass the event on."""
        check = raw.get("id")
        if self.pid and isinstance(check, str):
            used = self.cpu(self.pid)
            if raw.get("status") == RUNNING:
                self.started[check] = used
            elif check in self.started:
                self.spent[check] = used - self.started.pop(check)
        super().raw_event(raw)


def needs(exercise: Exercise, solution: Path, seed: int, *, correct: bool = True) -> dict[str, float]:
    """Each check's CPU seconds in one cold grading of `solution` (the most over the cohort's processes); a
    correct solution must pass, and no file may reach a limit. A grading the machine broke (status error: a
    process killed from outside, on a shared machine) is graded once more before the run gives up."""
    for attempt in (1, 2):
        spent, result = _graded(exercise, solution, seed)
        if result.status != "error":
            break
        print(f"  {solution.name}: {result.message} (attempt {attempt})", flush=True)
    if result.status in ("timeout", "error") or (correct and not result.passed):
        raise SystemExit(f"{exercise.name}: {solution.name} is {result.status} with seed {seed}: {result.message}")
    return spent


def _graded(exercise: Exercise, solution: Path, seed: int) -> tuple[dict[str, float], ExerciseResult]:
    """One cold grading of `solution`, with an empty compilation cache: each check's CPU seconds, and the
    verdict."""
    folder = Path(tempfile.mkdtemp(prefix="bench-check-cpu-"))
    try:
        learner = folder / exercise.stub_rel.name
        shutil.copy(solution, learner)
        Recorder.made.clear()
        result = runner.grade(exercise, learner, seed=seed, cache_dir=folder / "cache", skip_stub=False)
        spent: dict[str, float] = {}
        for recorder in Recorder.made:
            for check, cpu in recorder.spent.items():
                spent[check] = max(spent.get(check, 0.0), cpu)
        return spent, result
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def slowest(spent: dict[str, float]) -> tuple[str, float]:
    """The check that needed the most CPU, and how much."""
    check = max(spent, key=lambda c: spent[c])
    return check, spent[check]


def worst(exercise: Exercise, paths: list[Path], correct: bool) -> tuple[float, str]:
    """The slowest check of any of `paths` (seed 1), and which file and check it was."""
    found = (0.0, "")
    for path in paths:
        check, need = slowest(needs(exercise, path, 1, correct=correct))
        found = max(found, (round(need, 2), f"{path.name}: {check}"))
    return found


def measure(exercise: Exercise, alternatives: bool, wrong: bool) -> dict[str, Any]:
    """One exercise's figures: each check of the reference (the most over the seeds), and the slowest check
    of any alternative and of any wrong variant, when asked."""
    reference: dict[str, float] = {}
    for seed in range(1, RUNS + 1):
        for check, cpu in needs(exercise, exercise.solution_path, seed).items():
            reference[check] = max(reference.get(check, 0.0), round(cpu, 2))
    check, need = slowest(reference)
    figures: dict[str, Any] = {"reference_s": need, "slowest": check, "checks": reference}
    if alternatives:
        paths = sorted((ALTERNATIVES / exercise.name).glob("*.py"))
        figures["alternatives_s"], figures["alternative"] = worst(exercise, paths, True)
    if wrong:
        paths = sorted((exercise.solution_path.parent / "wrong").glob("*.py"))
        figures["wrong_s"], figures["wrong"] = worst(exercise, paths, False)
    return figures


def main() -> None:
    """Measure every exercise (or BENCH_ONLY), print a line each, and write the record when asked."""
    runner.Stopwatch = cohort.Stopwatch = Recorder  # type: ignore[misc]
    course = load_course(ROOT)
    only = [n for n in os.environ.get("BENCH_ONLY", "").split(",") if n]
    alternatives, wrong = os.environ.get("BENCH_ALTERNATIVES") == "1", os.environ.get("BENCH_WRONG") == "1"
    load_before = load_average()
    record = json.loads(RECORD.read_text()) if RECORD.is_file() else {"exercises": {}}
    for exercise in course.exercises:
        if not only or exercise.name in only:
            record["exercises"][exercise.name] = _one(exercise, record, alternatives, wrong)
    print(f"CPU seconds of the slowest check, most of {RUNS} seeds, cold; load average before {load_before}, "
          f"after {load_average()}")


def _one(exercise: Exercise, record: dict[str, Any], alternatives: bool, wrong: bool) -> dict[str, Any]:
    """Measure one exercise, print its line, and write the record with it when asked; its figures."""
    figures = measure(exercise, alternatives, wrong)
    kept = record["exercises"].get(exercise.name, {})
    for key in ("alternatives_s", "alternative", "wrong_s", "wrong"):  # not measured this time: the last figures
        if key not in figures and key in kept:
            figures[key] = kept[key]
    record["exercises"][exercise.name] = figures
    budget = limits.budget(exercise.meta).check_cpu_s
    others = "".join(f", {what} {figures[key]:.2f} s" for what, key in (("alternatives", "alternatives_s"),
                                                                      ("wrong", "wrong_s")) if key in figures)
    print(f"{exercise.name:22} reference {figures['reference_s']:.2f} s ({figures['slowest']}){others}; "
          f"budget {budget:g} s: {budget / max(figures['reference_s'], 0.01):.1f}x", flush=True)
    if os.environ.get("BENCH_WRITE") == "1":  # after each exercise: a long run stopped keeps what it measured
        record.update(measured=date.today().isoformat(), runs=RUNS)
        RECORD.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return figures


if __name__ == "__main__":
    main()
