"""Run one learner's file on the chip, in a process of its own, and read back what it found.

The chip is a shared, fragile thing: one process at a time may hold a TPU, and a kernel can halt
its core, after which every program of that process fails. So each file runs in a fresh
process (`course.chip.child`), in a new session so that everything it starts ends with it, one
at a time on this machine (a lock beside the system's temporary files), under a wall-clock cap.
What comes back is the child's JSON report; a child that died without one is that file's
failure, said in a sentence. Nothing here imports JAX.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from course.registry import Exercise

__all__ = ["ChipReport", "run"]

LOCK = Path(tempfile.gettempdir()) / "course-chip.lock"
"""Held while a process of ours has the chip: a second would fail to open it."""
WALL_S = {"check": 240.0, "bench": 600.0, "estimate": 240.0}
"""How long one file's chip process may run, by mode, before it is stopped."""
IN_USE = ("libtpu multi-process lockfile", "TPU is already in use", "Device or resource busy")
"""What JAX says when another process holds the chip."""
IN_USE_WORDS = ("the TPU is in use by another program (a notebook, or another `course`): close it, or in a notebook "
                "that holds the chip use `course.check` and `course.bench`, which run there; `--no-chip` skips this")


@dataclass
class ChipReport:
    """What the chip process found for one file."""

    name: str
    mode: str
    chip: str = ""
    device_kind: str = ""
    estimated: bool = False
    calls: list[dict[str, Any]] = field(default_factory=list)
    error: str = ""
    """Why the process found nothing (or stopped early), in a sentence: the file's failure, or the machine's."""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """Whether every call was made and came out right."""
        return not self.error and bool(self.calls) and all(
            c.get("status") in ("matched", "timed", "estimated") for c in self.calls)

    def to_json(self) -> dict[str, Any]:
        """The report as plain data (`course check --json`, `course bench --json`)."""
        return {"name": self.name, "mode": self.mode, "chip": self.chip, "device_kind": self.device_kind,
                "estimated": self.estimated, "ok": self.ok, "error": self.error, "seconds": round(self.seconds, 3),
                "calls": self.calls}


def calls_of(exercise: Exercise, mode: str) -> list[str]:
    """The calls a mode makes of this exercise (none when it has no `[chip]` table)."""
    table = exercise.meta.chip or {}
    return list(table.get("calls" if mode == "check" else "bench") or [])


def run(exercise: Exercise, submission: Path, mode: str, *, tpu: str = "v5e", budget_s: float = 2.0,
        here: bool = False) -> ChipReport:
    """Run `submission` in a chip process in `mode` ("check", "bench" or "estimate") and return its report.

    `here`: in this process instead, for a notebook whose own JAX already holds the TPU (no other process
    could open it); the learner's kernels then run beside their own notebook, as their own cells do.
    """
    started = time.monotonic()
    report = ChipReport(exercise.name, mode)
    folder = Path(tempfile.mkdtemp(prefix="course-chip-"))
    try:
        copy = folder / submission.name
        shutil.copyfile(submission, copy)  # the file is read once; later edits change nothing in the run
        table = exercise.meta.chip or {}
        spec = {"mode": mode, "file": str(copy), "calls": calls_of(exercise, mode), "setup": table.get("setup", ""),
                "math": table.get("math"), "tpu": tpu, "budget_s": budget_s}
        (folder / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
        if here:
            _fill(report, _in_this_process(spec))
        elif mode == "estimate":  # no chip needed: nothing to wait for
            _launch(folder, mode, report)
        else:
            with _one_at_a_time():
                _launch(folder, mode, report)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    report.seconds = time.monotonic() - started
    return report


@contextlib.contextmanager
def _one_at_a_time() -> Iterator[None]:
    """Hold the machine's chip lock while the body runs, or run without it where the lock cannot be taken.

    The lock only spares a second `course` the chip's own refusal; a machine whose temporary folder maps owners
    (a TPU VM under gVisor showed every file there as uid 65534, which filelock refuses in a sticky folder) must
    not fail every chip run for it: the child still reads the chip's "in use" answer and says it in words.
    """
    from filelock import FileLock

    lock = FileLock(str(LOCK))
    try:
        lock.acquire()
    except OSError:
        yield
        return
    try:
        yield
    finally:
        lock.release()


def _in_this_process(spec: dict[str, Any]) -> dict[str, Any]:
    """The child's report, made in this process."""
    from course.chip.child import run_calls

    return run_calls(spec, lambda so_far: None)


def _fill(report: ChipReport, data: dict[str, Any]) -> None:
    """Copy a child's report into `report`."""
    report.chip, report.device_kind = str(data.get("chip", "")), str(data.get("device_kind", ""))
    report.estimated = bool(data.get("estimated", False))
    report.calls = [c for c in data.get("calls", []) if isinstance(c, dict)]
    if isinstance(data.get("error"), str):
        report.error = f"your file could not be imported for the chip: {data['error']}"
    elif isinstance(data.get("no_chip"), str):
        report.error = (IN_USE_WORDS if any(m in data["no_chip"] for m in IN_USE)
                        else f"JAX could not open the TPU here ({data['no_chip']})")


def _launch(folder: Path, mode: str, report: ChipReport) -> None:
    """Start the child in its own session, wait for it within the cap, end its group, and read its report."""
    out, log = folder / "report.json", folder / "output.txt"
    env = _environment(mode)
    with log.open("wb") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "course.chip.child", str(folder / "spec.json"), str(out)],
                                cwd=folder, env=env, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            proc.wait(timeout=WALL_S[mode])
            stopped = False
        except subprocess.TimeoutExpired:
            stopped = True
        finally:
            _end_group(proc)
    _read(out, log, proc.returncode, stopped, mode, report)


def _environment(mode: str) -> dict[str, str]:
    """The learner's environment, with the import path `course` runs from; estimating, JAX on the CPU."""
    env = dict(os.environ)
    here = str(Path(__file__).resolve().parents[2])  # the folder that holds the `course` package
    paths = [here, *(p for p in sys.path if p and Path(p).is_dir() and p != here)]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    if mode == "estimate":
        env["JAX_PLATFORMS"] = "cpu"
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return env


def _end_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill whatever is left of the child's session, and reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _read(out: Path, log: Path, code: int | None, stopped: bool, mode: str, report: ChipReport) -> None:
    """Fill `report` from the child's report file, or say why there is none (or why it is short)."""
    printed = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
    try:
        data = json.loads(out.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    _fill(report, data)
    if report.error:
        return
    if stopped:
        report.error = (f"the {'chip' if mode != 'estimate' else 'estimate'} run took longer than "
                        f"{WALL_S[mode]:.0f} s and was stopped; is there a kernel or a loop that never ends?")
    elif any(mark in printed for mark in IN_USE):
        report.error = IN_USE_WORDS
    elif not data or code not in (0, 1):  # what it finished is kept; why it stopped is said
        report.error = _died(code, printed)


def _died(code: int | None, printed: str) -> str:
    """Why a child left no report: the signal or exit code, and its last line of output."""
    how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited with code {code}"
    last = next((ln.strip() for ln in reversed(printed.splitlines()) if ln.strip()), "")
    return (f"the process running your file on the chip {how} before reporting" + (f" ({last[:300]})" if last else "")
            + "; a kernel that halts the chip's core ends its process")
