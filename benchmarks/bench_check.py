"""SPEC §8: `course check update_with_donate` (solved) against bare pytest on the same grader (goal: 1.15x),
and its start-up on a terminal: from launch to "checking update_with_donate" on the screen, against
`python -c "import rich, typer"` (what any command of ours costs before it does anything).
"""

import statistics
import sys
import time

from _common import (
    COURSE,
    ROOT,
    RUNS,
    Screen,
    bare_pytest,
    grading_env,
    interleaved,
    load_average,
    report,
    solved_workspace,
    timed,
)

NAME = "update_with_donate"


def start_up(workspace) -> float:
    """Seconds from starting `course check NAME` in a pseudo-terminal to its live line naming the exercise."""
    started = time.perf_counter()
    screen = Screen(["check", NAME, "--workspace", str(workspace)], cwd=workspace)
    try:
        return screen.wait_for(f"checking {NAME}", 0) - started
    finally:
        screen.proc.wait(timeout=120)
        screen.close()


def main() -> None:
    """Measure both, interleaved, and print the ratios."""
    print(f"load average {load_average()}")
    workspace = solved_workspace()
    medians = interleaved(
        {
            "check": [*COURSE, "--course", str(ROOT), "check", NAME, "--workspace", str(workspace)],
            "bare": bare_pytest(NAME, workspace),
        },
        env=grading_env(),
    )
    report(f"course check {NAME} vs bare pytest", medians["check"], medians["bare"], 1.15)
    baseline = [sys.executable, "-c", "import rich, typer"]
    shown, imports = [], []
    for _ in range(RUNS):
        shown.append(start_up(workspace))
        imports.append(timed(baseline))
    report(f"course check {NAME}, launch to 'checking' on a terminal, vs import rich, typer",
           statistics.median(shown), statistics.median(imports), 2.0)
    print(f"load average {load_average()}")


if __name__ == "__main__":
    main()
