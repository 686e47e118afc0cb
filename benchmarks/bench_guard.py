"""What the content guard costs each answer an executor sends to its judge (`course.engine.common.guard.changes`,
called before every answer): this tree's guard against the guard of an earlier commit, in one process that holds
what an executor holds (JAX, Pallas, pytest and every module of `course` that answering the judge loads), rounds
alternating. Prints each side's median per comparison of the part that answers the judge and of the whole
snapshot, and their ratio.

    .venv/bin/python benchmarks/bench_guard.py                 # against BENCH_BASE (default cccbb70)
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

from _common import ROOT, RUNS

BASE = os.environ.get("BENCH_BASE", "cccbb70")
"""The commit whose guard is the baseline: the last one that copied each namespace before comparing it."""
CALLS = 200


def base_guard() -> types.ModuleType:
    """The guard module as BASE had it, loaded under a name of its own."""
    text = subprocess.run(["git", "-C", str(ROOT), "show", f"{BASE}:cli/course/engine/common/guard.py"],
                          capture_output=True, text=True, check=True).stdout
    path = Path(tempfile.mkdtemp(prefix="bench-guard-")) / "guard_base.py"
    path.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("guard_base", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def executor_modules() -> None:
    """Import what an executor of a JAX grading holds when it answers: JAX, Pallas's TPU side, pytest, the plugin
    and the machinery `serve.preload` loads, and the graders' helpers."""
    import jax.numpy  # noqa: F401
    import pytest  # noqa: F401
    from jax.experimental.pallas import tpu  # noqa: F401

    from course.engine.child import plugin  # noqa: F401
    from course.engine.executor import serve

    serve.preload()
    for name in ("course.grading.judge.arrays", "course.grading.observe.calls.compiles",
                 "course.grading.observe.kernels.kernels", "course.grading.observe.traces.jaxprs"):
        importlib.import_module(name)


def per_call_ms(guard: types.ModuleType, whole: bool) -> float:
    """Milliseconds of one comparison of a fresh snapshot (its answering part, or all of it) with nothing changed."""
    snap = guard.snapshot([])
    snap = snap if whole else guard.answering(snap)
    assert guard.changes(snap) == []
    start = time.perf_counter()
    for _ in range(CALLS):
        guard.changes(snap)
    return (time.perf_counter() - start) / CALLS * 1e3


def main() -> None:
    """Alternate the two guards RUNS times; print the medians and the ratio."""
    executor_modules()
    from course.engine.common import guard

    sides = {"base": base_guard(), "now": guard}
    found: dict[tuple[str, bool], list[float]] = {}
    for k in range(RUNS):
        for name in (("base", "now") if k % 2 == 0 else ("now", "base")):
            for whole in (False, True):
                found.setdefault((name, whole), []).append(per_call_ms(sides[name], whole))
    snap = guard.snapshot([])
    counts = (len(guard.answering(snap)[0]), len(snap[0]), len(guard.answering(snap)[2][1]))
    for whole, label in ((False, "before each answer (the machinery that answers)"), (True, "at each verdict (all)")):
        base, now = (statistics.median(found[(side, whole)]) for side in ("base", "now"))
        print(f"{label:50} {BASE}: {base:.3f} ms   now: {now:.3f} ms   ({now / base:.2f}x)")
    print(f"namespaces answering / in all: {counts[0]} / {counts[1]}, names and values compared before each "
          f"answer: {counts[2]}; median of {RUNS} alternating rounds of {CALLS} comparisons; load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    sys.exit(main())
