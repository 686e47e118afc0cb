"""Gradescope's run of one submission of the whole course, in Gradescope's layout and within its default limits.

The bundle `course autograder gradescope` writes is unpacked into a temporary root standing for
/autograder (R/source, R/run_autograder, R/submission, R/results), and `run_autograder` grades two
submissions there under Gradescope's default container limits, 0.5 CPU and 768 MiB: every
reference solution (a full, correct submission), the same files with an endless loop at the top
of every function (a submission that loops in every exercise), and the correct files but for the
first exercise's, which loops (the others must still be graded in full). The limits come from a cgroup
(v2 `cpu.max` and `memory.max`, or v1 `cpu.cfs_quota_us` and `memory.limit_in_bytes`) where one
can be made, else `systemd-run --scope -p CPUQuota=50% -p MemoryMax=768M`; the figures say which.
The cgroup also gets the largest CPU weight, so that on a busy machine it still has its half CPU,
as Gradescope's container has; the CPU seconds it used are printed too (the run took at least
twice that at 0.5 CPU).
Each must end within Gradescope's default timeout, 10 minutes, with room to spare. Printed: the
wall time, the score, the peak memory of the container and whether anything was killed for
memory, and per exercise what stopped it; written to `benchmarks/gradescope.json`, which `course autograder
gradescope` prints, and from it the figures of `docs/grading.md` and `benchmarks/README.md`
(`gradescope_figures.py`). Run as root (a cgroup is made): `sudo .venv/bin/python benchmarks/bench_gradescope.py`,
again whenever the course's checks change. `BENCH_SUBMISSIONS=correct,looping` runs only those.
"""

from __future__ import annotations

import ast
import contextlib
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import gradescope_figures
from _common import COURSE, ROOT

CPU_QUOTA = (50_000, 100_000)  # 0.5 CPU: 50 ms of every 100 ms
MEMORY = 768 * 2**20
OUT = ROOT / "benchmarks" / "gradescope.json"


def bundle_root() -> Path:
    """The course's bundle unpacked as Gradescope's image build unpacks it, in a temporary root."""
    root = Path(tempfile.mkdtemp(prefix="bench-gradescope-"))
    subprocess.run([*COURSE, "--course", str(ROOT), "autograder", "gradescope", "--out", str(root / "a.zip")],
                   check=True, capture_output=True)
    with zipfile.ZipFile(root / "a.zip") as archive:
        archive.extractall(root / "source")
    shutil.copy(root / "source" / "run_autograder", root / "run_autograder")
    os.chmod(root / "run_autograder", 0o755)
    return root


def looping(source: str) -> str:
    """`source` with `while True: pass` first in every function: each check that calls one never ends."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            node.body.insert(0, ast.While(test=ast.Constant(True), body=[ast.Pass()], orelse=[]))
    return ast.unparse(ast.fix_missing_locations(tree))


def submission(kind: str) -> dict[str, str]:
    """Every exercise's file of a `kind` submission, by its path in the students' copy: correct, looping
    in every exercise, or looping in the first alone (`first_looping`)."""
    from course.registry import load_course

    files = {}
    for i, exercise in enumerate(load_course(ROOT).exercises):
        text = exercise.solution_path.read_text(encoding="utf-8")
        loops = kind == "looping" or (kind == "first_looping" and i == 0)
        files[str(exercise.stub_rel)] = looping(text) if loops else text
    return files


@contextlib.contextmanager
def limited(name: str) -> Iterator[tuple[list[str], str, list[Path]]]:
    """A command prefix that runs under 0.5 CPU and 768 MiB, how, and the cgroups to read (memory first)."""
    v2, v1 = Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/cpu")
    made: list[Path] = []
    try:
        if (v2 / "cgroup.controllers").is_file():
            group = v2 / name
            group.mkdir()
            made.append(group)
            (group / "cpu.max").write_text(f"{CPU_QUOTA[0]} {CPU_QUOTA[1]}")
            (group / "cpu.weight").write_text("10000")
            (group / "memory.max").write_text(str(MEMORY))
            yield _joining([group]), "cgroup v2 (cpu.max 50000 100000, cpu.weight 10000, memory.max 768 MiB)", [group]
        elif (v1 / "cpu.cfs_quota_us").is_file() and os.access(v1, os.W_OK):
            cpu, memory, account = (v1.parent / kind / name for kind in ("cpu", "memory", "cpuacct"))
            for group in (cpu, memory, account):
                group.mkdir()
                made.append(group)
            (cpu / "cpu.cfs_period_us").write_text(str(CPU_QUOTA[1]))
            (cpu / "cpu.cfs_quota_us").write_text(str(CPU_QUOTA[0]))
            (cpu / "cpu.shares").write_text("262144")
            (memory / "memory.limit_in_bytes").write_text(str(MEMORY))
            with contextlib.suppress(OSError):  # no swap beyond the limit, as in Gradescope's container
                (memory / "memory.memsw.limit_in_bytes").write_text(str(MEMORY))
            yield (_joining([cpu, memory, account]), "cgroup v1 (cpu.cfs_quota_us 50000 of 100000, cpu.shares "
                   "262144, memory.limit_in_bytes 768 MiB, no swap)", [memory, account])
        else:
            yield (["systemd-run", "--scope", "--quiet", "-p", "CPUQuota=50%", "-p", f"MemoryMax={MEMORY}"],
                   "systemd-run --scope CPUQuota=50% MemoryMax=768M", [])
    finally:
        for group in reversed(made):
            with contextlib.suppress(OSError):
                group.rmdir()


def _joining(groups: list[Path]) -> list[str]:
    """A prefix that moves the shell into `groups` and then runs the command."""
    moves = "; ".join(f"echo $$ > {g / 'cgroup.procs'}" for g in groups)
    return ["sh", "-c", f'{moves}; exec "$@"', "sh"]


def figures(groups: list[Path]) -> dict[str, object]:
    """The container's peak memory, whether the kernel killed anything in it for memory, and the CPU
    seconds it used (at 0.5 CPU the run took at least twice that, however idle the machine)."""
    if not groups:
        return {}
    group, account = groups[0], groups[-1]
    if (account / "cpuacct.usage").is_file():
        cpu_s = int((account / "cpuacct.usage").read_text()) / 1e9
    else:
        stat = dict(line.split() for line in (account / "cpu.stat").read_text().splitlines())
        cpu_s = int(stat["usage_usec"]) / 1e6
    peak = group / ("memory.peak" if (group / "memory.peak").is_file() else "memory.max_usage_in_bytes")
    events = group / ("memory.events" if (group / "memory.events").is_file() else "memory.oom_control")
    kills = [line.split()[1] for line in events.read_text().splitlines() if line.startswith("oom_kill ")]
    return {"peak_mb": round(int(peak.read_text()) / 2**20), "oom_kills": int(kills[0]) if kills else 0,
            "cpu_s": round(cpu_s, 1), "wall_at_half_cpu_idle_s": round(cpu_s / 0.5, 1)}


def run(root: Path, kind: str) -> dict[str, object]:
    """Grade one `kind` submission through R/run_autograder under the limits; its figures."""
    for folder in ("submission", "results"):
        shutil.rmtree(root / folder, ignore_errors=True)
    for rel, text in submission(kind).items():
        (root / "submission" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "submission" / rel).write_text(text, encoding="utf-8")
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "AUTOGRADER_PYTHON": sys.executable}
    with limited(f"bench-gradescope-{os.getpid()}-{kind}") as (prefix, how, groups):
        load = os.getloadavg()[0]
        started = time.monotonic()
        done = subprocess.run([*prefix, str(root / "run_autograder")], cwd=root, env=env, capture_output=True,
                              text=True, check=False)
        wall = time.monotonic() - started
        memory = figures(groups)
    (root / f"{kind}.log").write_text(done.stdout + done.stderr, encoding="utf-8")
    results = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    stopped = sum(STOPPED in t.get("output", "") for t in results["tests"])
    return {"submission": kind, "wall_s": round(wall, 1), "score": results["score"],
            "max_score": sum(t["max_score"] for t in results["tests"]),
            "execution_time_s": results["execution_time"], "checks_stopped_by_budget": stopped,
            "not_graded": results["extra_data"].get("not_graded", []), "limits": how,
            "load_average_before": round(load, 2), **memory,
            "exercises": [exercise(name, rec) for name, rec in results["extra_data"]["exercises"].items()]}


def exercise(name: str, rec: dict) -> dict[str, object]:
    """One exercise of a run: its status and points, how long it ran, and what stopped it: the budget, its own
    limit (CPU, wall-clock or memory) or nothing."""
    said = [rec.get("message", ""), *(c.get("message", "") for c in rec.get("checks", []))]
    stopped = "budget" if any(STOPPED in m for m in said) else "limit" if rec["status"] == "timeout" else ""
    return {"name": name, "status": rec["status"], "score": rec["score"], "max_score": rec["max_score"],
            "duration_s": rec.get("duration_s", 0.0), "stopped": stopped}


STOPPED = "stopped: the autograder's time budget ran out"


def main() -> None:
    """The submissions, one after the other; the figures printed and kept for `course autograder gradescope`."""
    from course.instructor import budget
    from course.registry import load_course

    root = bundle_root()
    asked = os.environ.get("BENCH_SUBMISSIONS", "correct,looping,first_looping").split(",")
    kinds = [k for k in ("correct", "looping", "first_looping") if k in asked]
    figures = []
    for kind in kinds:
        figures.append(run(root, kind))
        print(json.dumps(figures[-1]), flush=True)
    found = load_course(ROOT)
    kept = json.loads(OUT.read_text(encoding="utf-8")) if OUT.is_file() else {}
    runs = {**kept.get("runs", {}), **{f["submission"]: f for f in figures}}
    OUT.write_text(json.dumps({
        "course": found.meta.title, "exercises": len(found.exercises), "budget_s": budget.DEFAULT_BUDGET_S,
        "cpus": budget.GRADESCOPE_CPUS, "memory_mb": budget.GRADESCOPE_MEMORY_MB,
        "measured": datetime.date.today().isoformat(), "runs": runs}, indent=2) + "\n", encoding="utf-8")
    print(f"written {OUT}; logs in {root}")
    gradescope_figures.main([])  # the docs' figures, from what was just measured


if __name__ == "__main__":
    main()
