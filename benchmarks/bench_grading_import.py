"""What a grader's `from course.grading import ...` line costs, with this tree's package and an earlier one's.

Each run is a fresh interpreter that first imports what every grader imports anyway (JAX, NumPy,
pytest), then times the grader's own `from course.grading import ...` line alone and counts the
`course.grading` submodules it loaded. The earlier tree (`BENCH_BASE`, by default the commit before
the package's name-to-module table) is unpacked with `git archive` and put first on `PYTHONPATH`;
runs of the two trees are interleaved. `BENCH_ONLY` names the exercises (default
`update_with_donate,tiled_matmul`; `all` for every grader). A grader that imports its helpers from
the submodules themselves (`from course.grading.observe.traces.loops import ...`) never uses the package's lookup.
"""

import ast
import io
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from _common import ROOT, RUNS

DEFAULT = "update_with_donate,tiled_matmul"
# Timed inside the interpreter, so start-up and JAX (paid alike by both trees) stay out of the figure.
PROBE = """import sys, time
import jax, jax.numpy, numpy, pytest
start = time.perf_counter()
exec("from course.grading import " + sys.argv[1])
took = time.perf_counter() - start
print(took, sum(name.startswith("course.grading.") for name in sys.modules))
"""


def base_commit() -> str:
    """BENCH_BASE, or the parent of the commit that added the table's test."""
    if os.environ.get("BENCH_BASE"):
        return os.environ["BENCH_BASE"]
    added = subprocess.run(["git", "-C", str(ROOT), "log", "--diff-filter=A", "--format=%H", "--",
                            "tests/grading/test_package.py"], capture_output=True, text=True, check=True).stdout.split()
    return f"{added[-1]}^"


def unpacked(commit: str) -> Path:
    """The `cli` folder of `commit`, in a temporary folder (the repository's worktrees stay as they are)."""
    target = Path(tempfile.mkdtemp(prefix="bench-base-"))
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", commit, "cli"],
                             capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(target, filter="data")
    return target / "cli"


def grader_names(exercise: str) -> str:
    """The names the exercise's grader imports from `course.grading`, comma-separated."""
    (grader,) = ROOT.glob(f"graders/*_{exercise}/test_{exercise}.py")
    tree = ast.parse(grader.read_text(encoding="utf-8"))
    return ", ".join(a.name for node in tree.body if isinstance(node, ast.ImportFrom)
                     and node.module == "course.grading" for a in node.names)


def probe(names: str, cli: Path) -> tuple[float, int]:
    """One fresh run: the import line's seconds, and how many `course.grading` submodules it loaded."""
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(cli)}
    out = subprocess.run([sys.executable, "-c", PROBE, names], env=env, capture_output=True, text=True, check=True)
    took, count = out.stdout.split()
    return float(took), int(count)


def main() -> None:
    """Time each chosen grader's import line on both trees, interleaved, and print one line per grader."""
    only = os.environ.get("BENCH_ONLY", DEFAULT)
    exercises = ([p.name.split("_", 1)[1] for p in sorted((ROOT / "graders").iterdir()) if p.is_dir()]
                 if only == "all" else only.split(","))
    trees = {"before": unpacked(base_commit()), "now": ROOT / "cli"}
    for exercise in exercises:
        names = grader_names(exercise)
        if not names:  # its helpers come from their submodules by path: the package's lookup is not used
            print(f"{exercise}: imports nothing from the package itself")
            continue
        runs: dict[str, list[tuple[float, int]]] = {t: [] for t in trees}
        for tree in trees.values():  # warm-up: bytecode and page caches
            probe(names, tree)
        for _ in range(RUNS):
            for label, tree in trees.items():
                runs[label].append(probe(names, tree))
        before, now = (statistics.median(t for t, _ in runs[label]) for label in trees)
        print(f"{exercise} ({len(names.split(', '))} names): {1000 * before:.0f} ms and "
              f"{runs['before'][0][1]} submodules before, {1000 * now:.0f} ms and {runs['now'][0][1]} now: "
              f"{now / before:.2f}x (median of {RUNS})")


if __name__ == "__main__":
    main()
