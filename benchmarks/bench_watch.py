"""SPEC §8: `course watch`, timed from outside, as a learner meets it: a real `course watch
update_with_donate` in a pseudo-terminal, files saved the way editors save them, the clock
stopped when the text appears on the screen.

- save to "checking" on screen (goal: within 0.1 s);
- stub replaced by the solution, save to the full verdict (goal: under 1.0 s), and the same for
  an edit that changes the compiled program and for a re-save of unchanged code;
- a save during a running check (a version that loops forever) to the new verdict (goal: as
  fast as an idle save, taken as at most 1.2 times the stub-to-solution median);
- `q` during a running check to the `course watch` process gone (goal: under 0.3 s);
- at 80x30, as a learner's terminal is, the stub replaced by the solution, save to the settled
  screen: the verdict printed and the footer saying it passes (goal on an idle 2-core machine:
  within 0.5 s). `BENCH_ONLY=settle` measures this figure alone.

Each figure is the median of BENCH_RUNS; the baseline printed beside them is a cold
`course check` of the same exercise, measured in the same run.
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

from _common import COURSE, ROOT, RUNS, Screen, grading_env, load_average, solved_workspace, timed

NAME = "update_with_donate"
PASSES = f"{NAME} passes."
NOT_TRIED = f"for the task of {NAME}"  # what the screen of a saved stub asks for
FOOTER_PASSES = "· passes"
LOOPING = "def update_with_donate(state, delta):\n    while True:\n        pass\n"


def save(path: Path, text: str) -> float:
    """Save as many editors do (a new file renamed over the old); the moment of the rename."""
    tmp = path.with_name(f".{path.name}.swp")
    tmp.write_text(text)
    tmp.replace(path)
    return time.perf_counter()


def edited(solution: str, k: int) -> str:
    """The solution with k+1 exact multiplications by one added: the same values, a new program."""
    return solution.replace("return state + delta", "return (state + delta)" + " * 1.0" * (k + 1), 1)


def grading_started(screen: Screen) -> None:
    """Wait until the worker of `course watch` runs a grading (a process under it)."""
    import psutil

    deadline = time.monotonic() + 60
    while len(psutil.Process(screen.proc.pid).children(recursive=True)) < 2:
        assert time.monotonic() < deadline, "no grading started"
        time.sleep(0.005)
    time.sleep(0.3)  # well into the check


def saves(workspace: Path, path: Path, stub: str, solution: str) -> dict[str, list[float]]:
    """One watch session: every kind of save, RUNS times each; seconds from the save to the text."""
    found: dict[str, list[float]] = {"checking": [], "stub to solution": [], "changed program": [], "re-save": [],
                                     "save during a check": []}
    screen = Screen(["watch", NAME], cwd=workspace)
    try:
        screen.wait_for(PASSES, 0)
        for k in range(RUNS):
            mark = screen.mark()
            save(path, stub)
            screen.wait_for(NOT_TRIED, mark)
            mark = screen.mark()
            at = save(path, edited(solution, k))
            found["checking"].append(screen.wait_for(f"checking {NAME}...", mark) - at)
            found["stub to solution"].append(screen.wait_for(PASSES, mark) - at)
            mark = screen.mark()
            at = save(path, edited(solution, RUNS + k))
            found["changed program"].append(screen.wait_for(PASSES, mark) - at)
            mark = screen.mark()
            at = save(path, path.read_text())
            found["re-save"].append(screen.wait_for(PASSES, mark) - at)
            save(path, LOOPING)
            grading_started(screen)
            mark = screen.mark()
            at = save(path, edited(solution, 2 * RUNS + k))
            found["save during a check"].append(screen.wait_for(PASSES, mark) - at)
    finally:
        screen.close()
    return found


def settles(workspace: Path, path: Path, stub: str, solution: str) -> list[float]:
    """One watch session at 80x30; RUNS saves of the stub then the solution: seconds from the save of the
    solution to the settled screen (its verdict printed and the footer saying it passes)."""
    found = []
    screen = Screen(["watch", NAME], cwd=workspace, cols=80, rows=30)
    try:
        screen.wait_for(FOOTER_PASSES, 0)
        for k in range(RUNS):
            mark = screen.mark()
            save(path, stub)
            screen.wait_for(NOT_TRIED, mark)
            time.sleep(0.5)  # idle before the save, as a learner types
            mark = screen.mark()
            at = save(path, edited(solution, 3 * RUNS + k))
            found.append(max(screen.wait_for(PASSES, mark), screen.wait_for(FOOTER_PASSES, mark)) - at)
    finally:
        screen.close()
    return found


def quits(workspace: Path, path: Path, solution: str) -> list[float]:
    """RUNS watch sessions, each quit with `q` during a check that never ends; seconds to the exit."""
    found = []
    for _ in range(RUNS):
        path.write_text(solution)
        screen = Screen(["watch", NAME], cwd=workspace)
        try:
            screen.wait_for(PASSES, 0)
            save(path, LOOPING)
            grading_started(screen)
            at = screen.type("q")
            screen.proc.wait(timeout=30)
            found.append(time.perf_counter() - at)
        finally:
            screen.close()
    path.write_text(solution)
    return found


def main() -> None:
    """Measure and print each figure with the goal it meets or misses."""
    load_before = load_average()
    workspace = solved_workspace()
    path = workspace / "exercises" / f"01_{NAME}" / f"{NAME}.py"
    solution, stub = path.read_text(), (ROOT / "exercises" / f"01_{NAME}" / f"{NAME}.py").read_text()
    if os.environ.get("BENCH_ONLY") == "settle":
        samples = settles(workspace, path, stub, solution)
        print(f"course watch {NAME} at 80x30, save of the solution to the settled screen: "
              f"{statistics.median(samples):.3f} s (samples {', '.join(f'{x:.2f}' for x in samples)}; goal on an idle "
              f"machine <= 0.5 s; median of {RUNS}); load average before {load_before}, after {load_average()}")
        return
    found = saves(workspace, path, stub, solution)
    found["settled screen, 80x30"] = settles(workspace, path, stub, solution)
    found["q to exit"] = quits(workspace, path, solution)
    cold = statistics.median(
        timed([*COURSE, "check", NAME, "--workspace", str(workspace)], env=grading_env(), cwd=workspace)
        for _ in range(RUNS)
    )
    idle = statistics.median(found["stub to solution"])
    goals = {"checking": 0.1, "stub to solution": 1.0, "changed program": 1.0, "re-save": 1.0,
             "save during a check": idle * 1.2, "q to exit": 0.3, "settled screen, 80x30": 0.5}
    for label, samples in found.items():
        median = statistics.median(samples)
        verdict = "meets" if median < goals[label] else "misses"
        print(f"course watch {NAME}, {label}: {median:.3f} s (max {max(samples):.3f}; {median / cold:.2f}x a cold "
              f"`course check` of {cold:.3f} s; goal < {goals[label]:.3f} s: {verdict}; median of {RUNS})")
    print(f"load average before {load_before}, after {load_average()}")


if __name__ == "__main__":
    main()
