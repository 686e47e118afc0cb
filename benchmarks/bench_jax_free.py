"""What a grader that never imports JAX saves now that a grading sets JAX up only as JAX is imported
(`course.engine.child.plugin`): `course check` of the adversarial course's `double` (plain Python) and of the
real `update_with_donate` (which imports JAX, as every exercise of the course does), in this tree and in a
`git worktree` of BENCH_BASE, rounds alternating. Prints the median wall and CPU seconds (the command and
every process under it) of each, and their ratios.

    .venv/bin/python benchmarks/bench_jax_free.py             # against BENCH_BASE (default cccbb70)
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, RUNS

BASE = os.environ.get("BENCH_BASE", "cccbb70")
"""The last commit that imported JAX in every grading."""
CASES = {  # label -> (course folder under the tree, exercise, its file under the tree)
    "double (no JAX)": ("tests/adversarial/course", "double", "tests/adversarial/attacks/solution.py"),
    "update_with_donate (JAX)": (".", "update_with_donate", "solutions/01_update_with_donate/update_with_donate.py"),
}


def run(tree: Path, course: str, name: str, ws: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one `course check NAME` from `tree`'s own package; it must pass."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "course", "check", name, "--json", "-w", str(ws), "--course",
                           str(tree / course)], env={**os.environ, "PYTHONPATH": str(tree / "cli")},
                          capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"bench_jax_free: {name} did not pass in {tree}: {done.stdout[-600:]}{done.stderr[-600:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def workspace(tree: Path, course: str, name: str, source: str) -> Path:
    """A workspace of `tree`'s course in `course` holding `source` as the learner's file of `name`."""
    from course.registry import load_course

    target = Path(tempfile.mkdtemp(prefix="bench-ws-"))
    exercise = load_course(tree / course).get(name)
    (target / exercise.stub_rel).parent.mkdir(parents=True)
    shutil.copy(tree / source, target / exercise.stub_rel)
    return target


def main() -> None:
    """Both trees, each case, interleaved; a line per case."""
    base = Path(tempfile.mkdtemp(prefix="bench-jax-free-")) / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base), BASE], check=True,
                   capture_output=True)
    try:
        trees = {"base": base, "now": ROOT}
        for label, (course, name, source) in CASES.items():
            spaces = {side: workspace(tree, course, name, source) for side, tree in trees.items()}
            for side, tree in trees.items():
                run(tree, course, name, spaces[side])  # compile cache and page cache, for each side
            found: dict[str, list[tuple[float, float]]] = {side: [] for side in trees}
            for k in range(RUNS):
                for side in (("base", "now") if k % 2 == 0 else ("now", "base")):
                    found[side].append(run(trees[side], course, name, spaces[side]))
            (bw, bc), (nw, nc) = ([statistics.median(x[i] for x in found[side]) for i in (0, 1)] for side in trees)
            print(f"{label:26} wall {bw:5.2f} -> {nw:5.2f} s ({nw / bw:.2f}x)   CPU {bc:5.2f} -> {nc:5.2f} s "
                  f"({nc / bc:.2f}x)", flush=True)
        print(f"{BASE} against this tree; median of {RUNS} alternating rounds; load average "
              f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)], check=False,
                       capture_output=True)


if __name__ == "__main__":
    main()
