"""`course validate --mutants`: one exercise's mutants in under 2 minutes, the whole course in under 30 (2 cores).

Each chosen exercise is timed with `--mutants` and, as the baseline, with plain `course validate`
(its stub, solution and wrong variants), interleaved, `--jobs 2`; the line gives both times, the
mutants graded and their ratio. `BENCH_EXERCISES=a,b` picks the exercises (default: the three
with the most mutants); `BENCH_COURSE=1` also times the whole course once (about a quarter hour).
`BENCH_RUNS` (default 1 here: each run is long) sets the runs per exercise.
"""

import json
import os
import statistics
import subprocess
import time

from _common import COURSE, ROOT

RUNS = int(os.environ.get("BENCH_RUNS", "1"))
EXERCISE_GOAL_S = 120
COURSE_GOAL_S = 30 * 60


def run(*args: str) -> tuple[float, dict]:
    """Wall time of `course validate ARGS --jobs 2`, and its JSON report when it printed one."""
    start = time.perf_counter()
    done = subprocess.run([*COURSE, "--course", str(ROOT), "validate", *args, "--jobs", "2"],
                          capture_output=True, text=True, check=False, env={**os.environ, "COURSE_NO_PROGRESS": "1"})
    seconds = time.perf_counter() - start
    try:
        return seconds, json.loads(done.stdout)
    except json.JSONDecodeError:
        return seconds, {}


def busiest(count: int) -> list[str]:
    """The exercises with the most mutants."""
    from course.instructor import mutants
    from course.registry import load_course

    sizes = {e.name: len(mutants.make(e)) for e in load_course(ROOT).exercises if e.solution_path.is_file()}
    return sorted(sizes, key=lambda n: -sizes[n])[:count]


def main() -> None:
    """Time each exercise against its plain validation, then the whole course if asked."""
    chosen = [n for n in os.environ.get("BENCH_EXERCISES", "").split(",") if n] or busiest(3)
    for name in chosen:
        mutant_times, plain_times, report = [], [], {}
        for _ in range(RUNS):
            seconds, report = run("--mutants", name, "--json")
            mutant_times.append(seconds)
            plain_times.append(run(name)[0])
        spent, plain = statistics.median(mutant_times), statistics.median(plain_times)
        count = report.get("totals", {}).get("mutants", 0)
        print(f"{name:<22} --mutants {spent:6.1f} s ({count} mutants, {spent / max(count, 1):.2f} s each)   "
              f"validate {plain:5.1f} s   {spent / plain:.1f}x   goal <= {EXERCISE_GOAL_S} s: "
              f"{'meets' if spent <= EXERCISE_GOAL_S else 'misses'}", flush=True)
    if os.environ.get("BENCH_COURSE"):
        spent, report = run("--mutants", "--json")
        totals = report.get("totals", {})
        print(f"whole course --mutants {spent / 60:.1f} min ({totals.get('mutants', 0)} mutants, "
              f"{len(report.get('exercises', []))} exercises)   goal <= {COURSE_GOAL_S // 60} min: "
              f"{'meets' if spent <= COURSE_GOAL_S else 'misses'}")


if __name__ == "__main__":
    main()
