"""What binding facts to values costs (issue 43, item 1; goal: at most 1.2x per exercise): `course check NAME` of
the reference, with the consistency layer and without it, interleaved.

The layer is everything the judge and the executor do so that what is judged is what ran: the run recorder
around every call, each program a call ran fingerprinted and sent (`course.engine.executor.runs.ran_entries`),
the plain call beside a jitted one (`spare_inputs`, `plain_call`), the judge's reading and comparing of all
of it (`course.engine.judge.consistency`), and each plain call's chain (`runs.fed`) with the judge running it
again on fresh inputs (`course.grading.rerun`, `course.grading.called_programs`). "Without" is a copy of this tree
(a `git worktree` of HEAD, with uncommitted changes to those files copied in) in which those functions return at
once; nothing in the product can switch the layer off. Each side grades its own solved workspace (its own compile
cache), warmed by one grading first.

    .venv/bin/python benchmarks/bench_consistency.py          # a few exercises of each kind
    BENCH_EXERCISES=all BENCH_RUNS=3 .venv/bin/python benchmarks/bench_consistency.py
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, RUNS, solved_names

DEFAULT = ["update_with_donate", "ref_reads_writes", "smem_scalar", "alias_zero_init", "tiled_matmul",
           "flash_attention", "scan_layers", "remat_policy", "shard_and_reduce", "fsdp_step", "ring_allreduce",
           "sharded_donated_step", "mixed_precision"]
GOAL = 1.2

# (file under cli/course, function, what it returns at once) for the tree without the layer.
STUBS = [
    ("engine/executor/runs.py", "ran_entries", "[]"),
    ("engine/executor/probe.py", "spare_inputs", "None"),
    ("engine/judge/consistency.py", "received", "None"),
    ("engine/judge/consistency.py", "note_trace", "None"),
    ("engine/judge/consistency.py", "note_call", "None"),
    ("engine/judge/consistency.py", "note_plain", "None"),
    ("engine/judge/consistency.py", "note_static_trace", "None"),
    ("engine/judge/consistency.py", "no_host_callbacks", "None"),
    # The chain of each plain call, and the judge running it: a rerun says nothing could be run (the graders skip it),
    # `called_programs` sends the grader back to its trace, as before the chain.
    ("engine/executor/runs.py", "fed", "None"),
    ("grading/observe/calls/reruns.py", "rerun", "Rerun((), (), aot=True)"),
    ("grading/observe/calls/reruns.py", "called_programs", "fn(*args), None"),
]
RECORDER = ("engine/executor/serve.py", "record_runs(programs=True) as ran:", 'record_runs(["\\0"]) as ran:')
"""The recorder around every call, narrowed to a name no function has."""


def returning_at_once(text: str, function: str, value: str) -> str:
    """`text` with `function`'s body starting with `return value` (after its docstring)."""
    match = re.search(rf'^def {function}\(.*?\n(    """.*?"""\n)', text, flags=re.S | re.M)
    if match is None:
        raise SystemExit(f"bench_consistency: no function {function} with a docstring to stub; update STUBS")
    return text[:match.end()] + f"    return {value}\n" + text[match.end():]


def tree_without_layer() -> Path:
    """A worktree of HEAD, this tree's versions of the stubbed files copied in, the layer stubbed out."""
    target = Path(tempfile.mkdtemp(prefix="bench-consistency-")) / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(target), "HEAD"], check=True,
                   capture_output=True)
    for rel in {rel for rel, _, _ in STUBS} | {RECORDER[0]}:
        shutil.copyfile(ROOT / "cli" / "course" / rel, target / "cli" / "course" / rel)
    for rel, function, value in STUBS:
        path = target / "cli" / "course" / rel
        path.write_text(returning_at_once(path.read_text(encoding="utf-8"), function, value), encoding="utf-8")
    path = target / "cli" / "course" / RECORDER[0]
    text = path.read_text(encoding="utf-8")
    if RECORDER[1] not in text:
        raise SystemExit("bench_consistency: the executor's recorder line moved; update RECORDER")
    path.write_text(text.replace(RECORDER[1], RECORDER[2]), encoding="utf-8")
    return target


def workspace(tree: Path, names: list[str]) -> Path:
    """A fresh workspace of `tree`'s course holding the references of `names`."""
    from course.registry import load_course

    target = Path(tempfile.mkdtemp(prefix="bench-ws-"))
    subprocess.run(_course(tree, "init", str(target), "--course", str(tree)), check=True, capture_output=True,
                   env=_env(tree))
    course = load_course(tree)
    for name in names:
        exercise = course.get(name)
        shutil.copy(exercise.solution_path, target / exercise.stub_rel)
    return target


def _course(tree: Path, *args: str) -> list[str]:
    """`course ARGS` run from `tree`'s own package."""
    return [sys.executable, "-m", "course", *args]


def _env(tree: Path) -> dict[str, str]:
    """The environment that imports `course` from `tree`."""
    return {**os.environ, "PYTHONPATH": str(tree / "cli")}


def grade(tree: Path, ws: Path, name: str) -> float:
    """Wall time of `course check NAME` in `ws`; the reference must pass."""
    started = time.perf_counter()
    done = subprocess.run(_course(tree, "check", name, "--json", "-w", str(ws), "--course", str(tree)),
                          env=_env(tree), capture_output=True, text=True, check=False)
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"bench_consistency: {name} did not pass in {tree}: {done.stdout[-800:]}{done.stderr[-800:]}")
    return took


def main() -> None:
    """Both trees, each exercise, interleaved; a line per exercise and the worst ratio."""
    wanted = os.environ.get("BENCH_EXERCISES", "")
    names = solved_names() if wanted == "all" else (wanted.split(",") if wanted else DEFAULT)
    off = tree_without_layer()
    try:
        trees = {"with": ROOT, "without": off}
        spaces = {label: workspace(tree, names) for label, tree in trees.items()}
        worst = 0.0
        for name in names:
            times: dict[str, list[float]] = {label: [] for label in trees}
            for label, tree in trees.items():
                grade(tree, spaces[label], name)  # compile cache and page cache, for each side
            for _ in range(RUNS):
                for label, tree in trees.items():
                    times[label].append(grade(tree, spaces[label], name))
            on, bare = statistics.median(times["with"]), statistics.median(times["without"])
            worst = max(worst, on / bare)
            print(f"{name:24s} with {on:6.2f} s  without {bare:6.2f} s  ratio {on / bare:.2f}", flush=True)
        print(f"worst ratio {worst:.2f} (goal: at most {GOAL})")
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(off)], check=False,
                       capture_output=True)


if __name__ == "__main__":
    main()
