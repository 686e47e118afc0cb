"""What ml_dtypes 0.7 costs every process that imports JAX, against the release the project now asks for.

ml_dtypes 0.7.0's extension registers its dtypes' promoters with NumPy one at a time at import, which
took 0.75 to 1.07 s on a 2-core machine, where 0.6.0's took 7 ms. Every grading imports JAX twice
(the judge and the executor), so the learner pays it twice on every `course check`.

The baseline is a virtual environment made here that holds ml_dtypes 0.7.0 and reaches everything
else (JAX, `course` itself) through this environment's site-packages, so the two sides differ in that
one package. Rounds alternate between the sides; prints the median wall and CPU seconds of `import jax`
and of `course check update_with_donate` with its reference, and their ratios.

    .venv/bin/python benchmarks/bench_ml_dtypes.py          # pip fetches ml_dtypes 0.7.0 for the baseline
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from _common import ROOT, RUNS

BASELINE = os.environ.get("BENCH_ML_DTYPES", "0.7.0")
"""The ml_dtypes release measured against this environment's."""


def baseline_python(folder: Path) -> Path:
    """A virtual environment in `folder` with ml_dtypes BASELINE first on its path and this one's packages after."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    own = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              capture_output=True, text=True, check=True).stdout.strip())
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(own),
                    f"ml_dtypes=={BASELINE}"], check=True)
    # Processed after its own site-packages: this environment's packages, its editable `course` included.
    (own / "zz_rest.pth").write_text(f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n",
                                     encoding="utf-8")
    return python


def version(python: Path) -> str:
    """The ml_dtypes release `python` imports."""
    return subprocess.run([str(python), "-c", "import ml_dtypes; print(ml_dtypes.__version__)"],
                          capture_output=True, text=True, check=True).stdout.strip()


def measured(command: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds (the command and every process under it) of one run, which must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"bench_ml_dtypes: {' '.join(command)} failed: {done.stdout[-600:]}{done.stderr[-600:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def workspace() -> Path:
    """A workspace of the course holding update_with_donate's reference as the learner's file."""
    from course.registry import load_course

    target = Path(tempfile.mkdtemp(prefix="bench-ws-"))
    exercise = load_course(ROOT).get("update_with_donate")
    (target / exercise.stub_rel).parent.mkdir(parents=True)
    shutil.copy(exercise.solution_path, target / exercise.stub_rel)
    return target


def main() -> None:
    """Both environments, each case, rounds alternating; a line per case."""
    folder = Path(tempfile.mkdtemp(prefix="bench-ml-dtypes-"))
    try:
        sides = {"base": baseline_python(folder / "venv"), "now": Path(sys.executable)}
        print(f"ml_dtypes {version(sides['base'])} against {version(sides['now'])}", flush=True)
        spaces = {side: workspace() for side in sides}
        cases = {
            "import jax": lambda py, side: [str(py), "-c", "import jax"],
            "course check update_with_donate": lambda py, side: [
                str(py), "-m", "course", "check", "update_with_donate", "--json", "-w", str(spaces[side]),
                "--course", str(ROOT)],
        }
        for label, command in cases.items():
            for side, python in sides.items():
                measured(command(python, side))  # compile cache, bytecode and page cache, for each side
            found: dict[str, list[tuple[float, float]]] = {side: [] for side in sides}
            for k in range(RUNS):
                for side in (("base", "now") if k % 2 == 0 else ("now", "base")):
                    found[side].append(measured(command(sides[side], side)))
            (bw, bc), (nw, nc) = ([statistics.median(x[i] for x in found[side]) for i in (0, 1)] for side in sides)
            print(f"{label:32} wall {bw:5.2f} -> {nw:5.2f} s ({nw / bw:.2f}x)   CPU {bc:5.2f} -> {nc:5.2f} s "
                  f"({nc / bc:.2f}x)", flush=True)
        print(f"median of {RUNS} alternating rounds; load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
