"""SPEC §8: each exercise's `course check` on its solution against bare pytest on its grader (goal: at most 1.5x,
and under 10 s; an exercise graded in several processes against as many bare runs at once, and under 20 s).
`BENCH_ONLY=name,name` limits the exercises."""

import os

from _common import COURSE, ROOT, bare_cohort, bare_pytest, grading_env, interleaved, solved_names, solved_workspace

from course.registry import load_course


def main() -> None:
    """Measure each exercise, interleaved with its baseline, and print one line per exercise."""
    workspace = solved_workspace()
    only = [n for n in os.environ.get("BENCH_ONLY", "").split(",") if n]
    for name in only or solved_names():
        meta = load_course(ROOT).get(name).meta
        bare = bare_cohort(name, workspace, meta.processes) if meta.processes > 1 else bare_pytest(name, workspace)
        medians = interleaved(
            {
                "check": [*COURSE, "--course", str(ROOT), "check", name, "--workspace", str(workspace)],
                "bare": bare,
            },
            env=grading_env(meta.devices),
        )
        ratio, limit = medians["check"] / medians["bare"], 20 if meta.processes > 1 else 10
        meets = "meets" if ratio <= 1.5 and medians["check"] < limit else "misses"
        print(f"{name:22} course check {medians['check']:.2f} s, bare pytest {medians['bare']:.2f} s -> "
              f"{ratio:.2f}x (goal <= 1.5x and < {limit} s: {meets})")


if __name__ == "__main__":
    main()
