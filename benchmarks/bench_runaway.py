"""An endless loop in each exercise: the check that names it, and the CPU and wall seconds it took to be named.

Each exercise's reference solution has every public function replaced by `while True: pass`, and is
graded as `course check NAME` grades it (a cold process, an empty compilation cache), with the
exercise's own limits. Printed per exercise: the check whose own CPU limit stopped the loop, the CPU
seconds that check had used when it was stopped (as the stopwatch last read them: at most one poll,
POLL_S, past the limit), the check's budget, and the wall seconds from the start of the grading to
its verdict, which on a busy machine stretches with the load (the figure to read on a quiet one).
`BENCH_ONLY=name,name` limits the exercises.
"""

from __future__ import annotations

import ast
import os
import shutil
import tempfile
import time
from pathlib import Path

from _common import ROOT, load_average
from bench_check_cpu import Recorder

from course.engine.contain import limits
from course.engine.parent import cohort, runner
from course.registry import Exercise, load_course

LOOP = '''

def _runaway(*args, **kwargs):
    """Never returns."""
    while True:
        pass
'''


def runaway(source: str) -> str:
    """`source` with each public function replaced by one that never returns."""
    names = [n.name for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")]
    return source + LOOP + "".join(f"\n{name} = _runaway" for name in names) + "\n"


def named(exercise: Exercise) -> str:
    """Grade the looping file once; one line saying where and when the loop was named."""
    folder = Path(tempfile.mkdtemp(prefix="bench-runaway-"))
    try:
        learner = folder / exercise.stub_rel.name
        learner.write_text(runaway(exercise.solution_path.read_text(encoding="utf-8")), encoding="utf-8")
        Recorder.made.clear()
        began = time.monotonic()
        result = runner.grade(exercise, learner, seed=1, cache_dir=folder / "cache", skip_stub=False)
        wall = time.monotonic() - began
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    budget = limits.budget(exercise.meta).check_cpu_s
    stopped = [r for r in Recorder.made if r.stopped is not None]
    if result.status != "timeout" or not stopped:
        return f"{exercise.name:22} not stopped at a check's limit: {result.status}: {result.message[:120]}"
    first = stopped[0]
    check, used = first.stopped.id if first.stopped is not None else "?", first.at_stop
    said = sum("is there a loop that never ends?" in c.message for c in result.checks)
    return (f"{exercise.name:22} stopped in {check}: {used:.1f} s of CPU in the check (budget {budget:g} s), "
            f"named {wall:.1f} s after the grading began; the reason under {said} check(s)")


def main() -> None:
    """Loop in every exercise (or BENCH_ONLY) and print one line each."""
    Recorder.limited = True
    runner.Stopwatch = cohort.Stopwatch = Recorder  # type: ignore[misc]
    only = [n for n in os.environ.get("BENCH_ONLY", "").split(",") if n]
    before = load_average()
    for exercise in load_course(ROOT).exercises:
        if not only or exercise.name in only:
            print(named(exercise), flush=True)
    print(f"load average before {before}, after {load_average()}")


if __name__ == "__main__":
    main()
