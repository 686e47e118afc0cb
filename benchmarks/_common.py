"""Shared helpers for the benchmarks: a solved workspace, median timings, and one line per figure."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Learners' Pythons keep bytecode; timed without it, a run measures compiling the platform again.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
BIN = Path(sys.executable).parent
COURSE = [str(BIN / "course")]
RUNS = int(os.environ.get("BENCH_RUNS", "5"))


def solved_workspace() -> Path:
    """A fresh workspace (`course init`) holding the reference solution of every exercise that has one."""
    from course.registry import load_course

    target = Path(tempfile.mkdtemp(prefix="bench-ws-"))
    subprocess.run([*COURSE, "--course", str(ROOT), "init", str(target)], check=True, capture_output=True)
    for exercise in load_course(ROOT).exercises:
        if exercise.solution_path.is_file():
            shutil.copy(exercise.solution_path, target / exercise.stub_rel)
    return target


def solved_names() -> list[str]:
    """Exercises that have a reference solution (the course may still be in the making)."""
    from course.registry import load_course

    return [e.name for e in load_course(ROOT).exercises if e.solution_path.is_file()]


def timed(command: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None) -> float:
    """Wall time of one run of `command` (its output discarded)."""
    start = time.perf_counter()
    subprocess.run(command, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def bare_pytest(exercise_name: str, workspace: Path) -> list[str]:
    """`python -m pytest <grader>` with only the plugin options needed to load the same solution."""
    from course.registry import load_course

    exercise = load_course(ROOT).get(exercise_name)
    report = Path(tempfile.mkdtemp(prefix="bench-report-")) / "report.json"
    ini = report.parent / "pytest.ini"  # the repository's own pytest settings (xdist workers) stay out
    ini.write_text("[pytest]\n", encoding="utf-8")
    return [
        sys.executable,
        "-m",
        "pytest",
        str(exercise.grader_path),
        "-c",
        str(ini),
        "--rootdir",
        str(report.parent),
        "-p",
        "course.engine.child.plugin",
        "-q",
        "-p",
        "no:cacheprovider",
        "--course-report",
        str(report),
        "--course-submission",
        str(workspace / exercise.stub_rel),
    ]


def bare_cohort(exercise_name: str, workspace: Path, processes: int) -> list[str]:
    """`processes` bare pytest runs at once, joined by `jax.distributed` on a free loopback port: the
    baseline of an exercise graded in several processes. One command that starts them all and waits."""
    import json
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    commands = [[*bare_pytest(exercise_name, workspace), "--course-process", f"{i}/{processes}@127.0.0.1:{port}"]
                for i in range(processes)]
    # Each run ends as a graded one does: once every report is complete, all are ended (JAX's own
    # shutdown at exit waits on a barrier the first to leave breaks, which would time the exit).
    script = """import json, subprocess, sys, time
from pathlib import Path
from course.engine.wire.report import ReportError, read_signed
commands = json.loads(sys.argv[1])
reports = [Path(c[c.index("--course-report") + 1]) for c in commands]
for r in reports:
    r.unlink(missing_ok=True)  # the report of an earlier run of this command
procs = [subprocess.Popen(c) for c in commands]
def done(path):
    try:
        return read_signed(path, b"").get("complete", False)
    except ReportError:
        return False
while not all(done(r) for r in reports) and any(p.poll() is None for p in procs):
    time.sleep(0.02)
for p in procs:
    p.kill()
"""
    return [sys.executable, "-c", script, json.dumps(commands)]


def grading_env(devices: int = 1) -> dict[str, str]:
    """The environment a bare pytest run gets: CPU JAX with the exercise's device count and the compiler flags of
    a graded run, so that a baseline compiles as fast as the grading it is compared with."""
    from course.engine.parent import invocation

    return {**os.environ, "JAX_PLATFORMS": "cpu", "XLA_FLAGS": invocation.xla_flags(devices)}


def interleaved(
    commands: dict[str, list[str]], env: dict[str, str] | None = None, cwd: Path | None = None
) -> dict[str, float]:
    """Median wall time of each command, runs interleaved so machine noise hits all alike."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    for command in commands.values():  # one warm-up each: bytecode and page caches
        timed(command, env=env, cwd=cwd)
    for _ in range(RUNS):
        for name, command in commands.items():
            times[name].append(timed(command, env=env, cwd=cwd))
    return {name: statistics.median(values) for name, values in times.items()}


def report(figure: str, measured: float, baseline: float, goal: float, unit: str = "s") -> None:
    """One line: the figure, both medians, the ratio, and whether it meets the goal."""
    ratio = measured / baseline
    verdict = "meets" if ratio <= goal else "misses"
    print(
        f"{figure}: {measured:.3f} {unit} vs {baseline:.3f} {unit} -> {ratio:.2f}x "
        f"(goal <= {goal}x: {verdict}; median of {RUNS})"
    )


class Screen:
    """`course ARGS` in a pseudo-terminal, timed from outside: when did some text appear on screen?"""

    def __init__(self, args: list[str], *, cwd: Path, cols: int = 120, rows: int = 40) -> None:
        import fcntl
        import pty
        import struct
        import termios
        import threading

        self.main, sub = pty.openpty()
        fcntl.ioctl(sub, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        self.proc = subprocess.Popen([*COURSE, *args], stdin=sub, stdout=sub, stderr=sub, cwd=cwd,
                                     env={**env, "TERM": "xterm"}, start_new_session=True)
        os.close(sub)
        self._chunks: list[tuple[float, bytes]] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        """Keep what the terminal shows, each piece stamped with when it arrived."""
        import select

        while True:
            try:
                if select.select([self.main], [], [], 0.05)[0]:
                    chunk = os.read(self.main, 65536)
                    if not chunk:
                        return
                    with self._lock:
                        self._chunks.append((time.perf_counter(), chunk))
                elif self.proc.poll() is not None:
                    return
            except OSError:
                return

    def mark(self) -> int:
        """A position in the output: later waits look only at what comes after it."""
        with self._lock:
            return len(self._chunks)

    def wait_for(self, text: str, after: int, timeout_s: float = 120) -> float:
        """The moment `text` first appeared after position `after` (waiting for it if need be)."""
        needle = text.encode()
        deadline = time.monotonic() + timeout_s
        while True:
            with self._lock:
                chunks = self._chunks[after:]
            seen = b""
            for stamp, chunk in chunks:
                seen += chunk
                if needle in seen:
                    return stamp
            if time.monotonic() > deadline:
                raise TimeoutError(f"{text!r} did not appear: {seen[-1500:].decode(errors='replace')}")
            time.sleep(0.002)

    def type(self, keys: str) -> float:
        """Press `keys`; the moment they were sent."""
        os.write(self.main, keys.encode())
        return time.perf_counter()

    def close(self) -> None:
        """End the process if it is still there."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        os.close(self.main)


def load_average() -> str:
    """The machine's load average, for the record (it is shared)."""
    return " ".join(f"{x:.1f}" for x in os.getloadavg())
