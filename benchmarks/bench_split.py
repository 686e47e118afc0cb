"""What splitting a grading into a judge and an executor costs (`course.engine.parent.judging`).

Grades reference solutions through the runner in this process, split (the judge decides the checks
marked `judge`, in a process of its own) and not split (every check beside the learner's code, as a
grader without judge checks runs), interleaved: cold (a fresh Python per grading), forked from a
warm worker (`course check --all`, watch), and sandboxed as `course grade` grades. Prints each
median and the ratio split / not split. `BENCH_EXERCISES` (comma-separated) picks the exercises.
"""

import os
import statistics
import time
from pathlib import Path

from _common import ROOT, RUNS, solved_workspace

from course.engine.contain import protections
from course.engine.parent import judging, runner
from course.registry import load_course

NAMES = os.environ.get("BENCH_EXERCISES", "update_with_donate").split(",")


def one(exercise: object, path: Path, worker: object, split: bool, sandbox: object) -> float:
    """Wall time of one grading, split or not; it must pass."""
    original = judging.wanted
    if not split:
        judging.wanted = lambda exercise, hidden: False  # the grading as a grader without judge checks runs
    try:
        start = time.perf_counter()
        result = runner.grade(exercise, path, worker=worker, sandbox=sandbox)
        took = time.perf_counter() - start
    finally:
        judging.wanted = original
    assert result.status == "passed", (result.message, [(c.id, c.message) for c in result.checks])
    return took


def main() -> None:
    """Time both ways in each setting, interleaved."""
    workspace = solved_workspace()
    course = load_course(ROOT)
    worker = runner.start_worker()
    settings = (("check, cold", None, None), ("check, warm", worker, None),
                ("grade, sandboxed", None, protections.confinement()))
    try:
        for name in NAMES:
            exercise = course.get(name)
            path = workspace / exercise.stub_rel
            for label, launcher, sandbox in settings:
                times: dict[bool, list[float]] = {True: [], False: []}
                one(exercise, path, launcher, True, sandbox)  # compile caches and page cache, for both
                for _ in range(RUNS):
                    for split in (True, False):
                        times[split].append(one(exercise, path, launcher, split, sandbox))
                on, off = statistics.median(times[True]), statistics.median(times[False])
                print(f"{name}, {label}: split {on:.2f} s, not split {off:.2f} s, ratio {on / off:.2f}")
    finally:
        if worker is not None:
            worker.close()


if __name__ == "__main__":
    main()
