"""SPEC §8: what XLA's faster CPU emitters (`course.engine.parent.invocation.FAST_COMPILE`) save: every reference
solution graded over one warm worker, without a compilation cache, with the flag and without it, rounds
alternating so machine noise hits both alike. Prints each exercise's medians and the whole course's ratio.
`BENCH_ONLY=name,name` limits the exercises; BENCH_RUNS rounds (default 3)."""

from __future__ import annotations

import os
import statistics
import time

from _common import ROOT

from course.engine.parent import invocation, runner
from course.registry import Exercise, load_course

RUNS = int(os.environ.get("BENCH_RUNS", "3"))


KNOWN = invocation.jaxlib_version()


def course_pass(exercises: list[Exercise], fast: bool, seed: int) -> dict[str, float]:
    """Seconds of each exercise's grading, one warm worker for all; every solution must pass."""
    # The version is read per grading: hiding it is how a grading goes without the flag.
    invocation.jaxlib_version = (lambda: KNOWN) if fast else (lambda: "")  # type: ignore[assignment]
    worker = runner.start_worker(None)
    assert worker is not None and worker.ready()
    times = {}
    try:
        for exercise in exercises:
            start = time.perf_counter()
            result = runner.grade(exercise, exercise.solution_path, worker=worker, skip_stub=False, seed=seed)
            times[exercise.name] = time.perf_counter() - start
            assert result.passed, (exercise.name, fast, [c.message for c in result.checks if not c.passed])
            flags = invocation.environment(exercise, None)["XLA_FLAGS"]
            assert (invocation.FAST_COMPILE in flags) == fast, flags
    finally:
        worker.close()
    return times


def main() -> None:
    """Alternate rounds with and without the flag; print medians per exercise and the course's total ratio."""
    if not KNOWN.startswith(invocation.FAST_COMPILE_JAXLIB):
        print(f"jaxlib {KNOWN or '(missing)'} is not known to accept {invocation.FAST_COMPILE}")
        return
    only = [n for n in os.environ.get("BENCH_ONLY", "").split(",") if n]
    exercises = [e for e in load_course(ROOT).exercises if e.solution_path.is_file() and (not only or e.name in only)]
    found: dict[bool, list[dict[str, float]]] = {True: [], False: []}
    for k in range(RUNS):
        for fast in (k % 2 == 0, k % 2 == 1):
            found[fast].append(course_pass(exercises, fast, seed=5 + k))
    for exercise in exercises:
        base, fast = (statistics.median(r[exercise.name] for r in found[f]) for f in (False, True))
        print(f"{exercise.name:22} {base:6.2f} s -> {fast:6.2f} s  ({fast / base:.2f}x)")
    base, fast = (statistics.median(sum(r.values()) for r in found[f]) for f in (False, True))
    print(f"{'whole course':22} {base:6.2f} s -> {fast:6.2f} s  ({fast / base:.2f}x, {invocation.FAST_COMPILE}; "
          f"median of {RUNS} alternating rounds; load average {' '.join(f'{x:.1f}' for x in os.getloadavg())})")


if __name__ == "__main__":
    main()
