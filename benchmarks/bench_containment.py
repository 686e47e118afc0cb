"""What the kernel containment of a grading costs (`course.engine.contain.contain`): a PID, user and mount
namespace per grading, entered before it runs anything, with its own /proc.

Grades `update_with_donate`'s reference solution through the runner in this process, cold (a fresh
Python per grading) and forked from a warm worker, with the containment on and off, interleaved;
"off" is the path a machine without user namespaces takes (the parent a child subreaper, a sweep at
the end). Prints each median and the ratio on/off.
"""

import statistics
import time
from pathlib import Path

from _common import ROOT, RUNS, solved_workspace

from course.engine.contain import protections
from course.engine.parent import runner
from course.registry import load_course

NAME = "update_with_donate"


def one(exercise: object, path: Path, worker: object, contained: bool) -> float:
    """Wall time of one grading, contained or not; it must pass."""
    original = protections.contained
    if not contained:
        protections.contained = lambda: None  # the grading as a machine without namespaces runs it
    try:
        start = time.perf_counter()
        result = runner.grade(exercise, path, worker=worker)
        took = time.perf_counter() - start
    finally:
        protections.contained = original
    assert result.status == "passed", result.message
    return took


def main() -> None:
    """Time both ways, cold and warm, interleaved."""
    if not protections.available().pid_namespace:
        print("this machine gives no PID namespace to a grading: nothing to compare")
        return
    workspace = solved_workspace()
    exercise = load_course(ROOT).get(NAME)
    path = workspace / exercise.stub_rel
    worker = runner.start_worker()
    try:
        for label, launcher in (("cold", None), ("warm", worker)):
            times: dict[bool, list[float]] = {True: [], False: []}
            one(exercise, path, launcher, True)  # compile caches and page cache, for both
            for _ in range(RUNS):
                for contained in (True, False):
                    times[contained].append(one(exercise, path, launcher, contained))
            on, off = statistics.median(times[True]), statistics.median(times[False])
            print(f"{label}: contained {on:.2f} s, not contained {off:.2f} s, ratio {on / off:.2f}")
    finally:
        if worker is not None:
            worker.close()


if __name__ == "__main__":
    main()
