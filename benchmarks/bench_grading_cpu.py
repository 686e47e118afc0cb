"""The CPU one grading costs in a warm worker: what `course watch` pays per save, whatever the machine's load.

A warm worker forks each grading and reaps it, so the CPU seconds of a grading process are what
the worker's reaped children gained during it. Each run grades a new version of the reference
solution of `update_with_donate` (BENCH_ONLY names another exercise) on one worker, as watch does;
the first grading warms the compilation cache and is not counted. Printed: the median grading's
CPU seconds, and the CPU seconds of `course` itself (waiting, reading the report) beside it. On an
idle 2-core machine the grading process's CPU is most of the time from a save to the verdict.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

import psutil
from _common import ROOT, RUNS, load_average

from course.engine.parent.runner import grade, start_worker
from course.registry import load_course


def main() -> None:
    """Grade RUNS + 1 versions of the solution on one warm worker and print the CPU figures."""
    name = os.environ.get("BENCH_ONLY", "update_with_donate")
    exercise = load_course(ROOT).get(name)
    folder = Path(tempfile.mkdtemp(prefix="bench-cpu-"))
    learner, cache = folder / exercise.stub_rel.name, folder / "cache"
    solution = exercise.solution_path.read_text()
    worker = start_worker(cache)
    assert worker is not None, "no warm worker on this platform"
    load_before, children, ours = load_average(), [], []
    try:
        for k in range(RUNS + 1):
            learner.write_text(f"{solution}\n# version {k}\n")  # a new file each time, as a save makes
            before, mine = psutil.Process(worker.pid).cpu_times(), time.process_time()
            result = grade(exercise, learner, seed=1, worker=worker, cache_dir=cache)
            after = psutil.Process(worker.pid).cpu_times()
            assert result.passed, result.message
            if k:
                children.append(after.children_user + after.children_system
                                - before.children_user - before.children_system)
                ours.append(time.process_time() - mine)
    finally:
        worker.close()
    print(f"{name}: one grading in a warm worker used {statistics.median(children):.3f} CPU s "
          f"(samples {', '.join(f'{c:.3f}' for c in children)}), and `course` {statistics.median(ours):.3f} CPU s "
          f"beside it; median of {RUNS}; load average before {load_before}, after {load_average()}")


if __name__ == "__main__":
    main()
