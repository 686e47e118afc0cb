"""SPEC §8: `course check --all` (solved course) against the sum of per-exercise bare pytest runs (goal: 0.6x).

Each bare run gets its exercise's device count, as a graded run does.
"""

import statistics

from _common import COURSE, ROOT, RUNS, bare_pytest, grading_env, report, solved_names, solved_workspace, timed

from course.registry import load_course


def main() -> None:
    """Measure both, interleaved, and print the ratio."""
    workspace = solved_workspace()
    names = solved_names()
    course = load_course(ROOT)
    check_all = [*COURSE, "--course", str(ROOT), "check", *names, "--workspace", str(workspace)]
    bare = [(bare_pytest(name, workspace), grading_env(course.get(name).meta.devices)) for name in names]
    timed(check_all, env=grading_env())
    checks, sums = [], []
    for _ in range(RUNS):
        checks.append(timed(check_all, env=grading_env()))
        sums.append(sum(timed(command, env=env) for command, env in bare))
    figure = f"course check --all ({len(names)} solved exercises) vs sum of bare pytest runs"
    report(figure, statistics.median(checks), statistics.median(sums), 0.6)


if __name__ == "__main__":
    main()
