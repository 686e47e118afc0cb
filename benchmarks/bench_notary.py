"""Issue 12's figure: what the notary and guard add to grading `update_with_donate` (goal: at most 5%).

The notary lives inside the grading process, so its cost is the cost of the plugin. This script
checks out the commit just before the notary arrived (or `BENCH_BASE`) into a temporary git
worktree and times the same grader on the same solution with each tree's plugin (bare pytest,
`PYTHONPATH` pointing at the tree), interleaved; the rest of `course check` (the runner, the
isolation) is the same code in both. It prints both medians, the difference, and that difference
as a share of a full `course check` on this tree.
"""

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import COURSE, ROOT, RUNS, solved_workspace, timed

NAME = "update_with_donate"


def base_commit() -> str:
    """BENCH_BASE, or the parent of the commit that added the notary."""
    if os.environ.get("BENCH_BASE"):
        return os.environ["BENCH_BASE"]
    added = subprocess.run(["git", "-C", str(ROOT), "log", "--diff-filter=A", "--format=%H", "--",
                            "cli/course/engine/notary.py"], capture_output=True, text=True, check=True).stdout.split()
    return f"{added[-1]}^"


def bare(tree: Path, workspace: Path, grader: Path, report_dir: Path) -> list[str]:
    """The grader run with `tree`'s plugin, as a grading process runs it (minus the isolation)."""
    # The plugin's module, in the layout of `tree` (engine/child/ since the engine has one folder per side).
    plugin = "course.engine.child.plugin" if (tree / "cli/course/engine/child").is_dir() else "course.engine.plugin"
    return [sys.executable, "-m", "pytest", str(grader), "-p", plugin, "-q",
            "-p", "no:cacheprovider", "-p", "no:unraisableexception", "-p", "no:threadexception",
            "--course-report", str(report_dir / "r.json"),
            "--course-submission", str(workspace / "exercises" / "01_update_with_donate" / f"{NAME}.py")]


def main() -> None:
    """Time both plugins, interleaved, and a full `course check` on this tree."""
    workspace = solved_workspace()
    old = Path(tempfile.mkdtemp(prefix="bench-base-")) / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(old), base_commit()],
                   check=True, capture_output=True)
    grader = ROOT / "graders" / "01_update_with_donate" / f"test_{NAME}.py"
    try:
        reports = {t: Path(tempfile.mkdtemp(prefix="bench-report-")) for t in ("old", "new")}
        trees = {"old": old, "new": ROOT}
        commands = {t: bare(trees[t], workspace, grader, reports[t]) for t in trees}
        envs = {t: {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(trees[t] / "cli")} for t in trees}
        times: dict[str, list[float]] = {"old": [], "new": []}
        for t in trees:  # warm-up: bytecode and page caches
            timed(commands[t], env=envs[t])
        for _ in range(RUNS):
            for t in trees:
                times[t].append(timed(commands[t], env=envs[t]))
        check = statistics.median(
            timed([*COURSE, "--course", str(ROOT), "check", NAME, "--workspace", str(workspace)])
            for _ in range(RUNS))
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)], capture_output=True)
        shutil.rmtree(old.parent, ignore_errors=True)
    before, after = statistics.median(times["old"]), statistics.median(times["new"])
    share = (after - before) / check
    print(f"notary and guard, grading {NAME}: {before:.3f} s before, {after:.3f} s with them "
          f"(+{after - before:.3f} s); course check takes {check:.3f} s, so +{100 * share:.1f}% "
          f"(goal <= 5%: {'meets' if share <= 0.05 else 'misses'}; median of {RUNS})")


if __name__ == "__main__":
    main()
