"""SPEC §8: `course inspect NAME` on a solved exercise against `course check NAME` (goal: at most 1.5x).

Both run cold, as a learner runs them (one fresh grading process each), on the reference solution
in a solved workspace, interleaved. Every exercise by default; `BENCH_EXERCISES=a,b` picks some.
"""

import os

from _common import COURSE, ROOT, RUNS, interleaved, solved_names, solved_workspace

GOAL = 1.5


def main() -> None:
    """Measure each exercise's pair, interleaved, and print a table and the worst ratio."""
    workspace = solved_workspace()
    chosen = [n for n in os.environ.get("BENCH_EXERCISES", "").split(",") if n] or solved_names()
    base = [*COURSE, "--course", str(ROOT)]
    rows = []
    for name in chosen:
        medians = interleaved({
            "inspect": [*base, "inspect", name, "--workspace", str(workspace)],
            "check": [*base, "check", name, "--workspace", str(workspace)],
        })
        rows.append((name, medians["inspect"], medians["check"]))
        print(f"{name:<22} inspect {medians['inspect']:6.2f} s   check {medians['check']:6.2f} s   "
              f"{medians['inspect'] / medians['check']:.2f}x", flush=True)
    worst = max(rows, key=lambda r: r[1] / r[2])
    ratio = worst[1] / worst[2]
    print(f"course inspect vs course check, worst of {len(rows)}: {worst[0]} {ratio:.2f}x "
          f"(goal <= {GOAL}x: {'meets' if ratio <= GOAL else 'misses'}; median of {RUNS})")


if __name__ == "__main__":
    main()
