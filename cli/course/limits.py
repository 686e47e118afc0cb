"""Start a grading process in its own process group, hold it to its limits, and leave nothing behind.

Limits: wall-clock time (the whole group is killed), memory (an address-space cap inside the
child and a watch on its resident size from outside), and output (kept up to a cap; a flood
stops the run). The parent becomes a child subreaper, so a process that tried to escape the
group by double-forking comes back to us and is killed too.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

OUTPUT_KEEP = 64 * 1024
OUTPUT_LIMIT = 32 * 1024 * 1024
POLL_S = 0.05
_PR_SET_CHILD_SUBREAPER = 36
_active: set[int] = set()
_active_lock = threading.Lock()


@dataclass
class Outcome:
    """How the grading process ended, as the parent observed it."""

    returncode: int | None
    timed_out: bool = False
    killed_for: str = ""
    output: str = ""


def _become_subreaper() -> None:
    """Ask Linux to hand orphaned descendants to this process (no-op elsewhere)."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def run_isolated(
    command: list[str],
    *,
    key: bytes,
    cwd: Path,
    env: dict[str, str],
    timeout_s: float,
    memory_mb: int,
) -> Outcome:
    """Run `command` (with `{keyfd}` replaced by a pipe carrying `key`) under the limits."""
    _become_subreaper()
    read_fd, write_fd = os.pipe()
    os.write(write_fd, key)
    os.close(write_fd)
    argv = [a.replace("{keyfd}", str(read_fd)) for a in command]
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        pass_fds=(read_fd,),
    )
    os.close(read_fd)
    with _active_lock:
        _active.add(proc.pid)
    _cap_memory(proc.pid, memory_mb)
    sink = _OutputSink(proc)
    outcome = Outcome(returncode=None)
    try:
        outcome.timed_out, outcome.killed_for = _wait(proc, sink, timeout_s, memory_mb)
    finally:
        _kill_group(proc)
        with _active_lock:
            _active.discard(proc.pid)
        _sweep_orphans()
    sink.join()
    outcome.returncode = proc.returncode
    outcome.output = sink.text()
    if sink.flooded and not outcome.killed_for:
        outcome.killed_for = (
            f"your code printed more than {OUTPUT_LIMIT // 2**20} MiB of output and "
            "was stopped; print less, or nothing, inside the function"
        )
    return outcome


def _cap_memory(pid: int, memory_mb: int) -> None:
    """Cap the child's address space (twice the resident limit: JAX reserves more than it uses)."""
    limit = memory_mb * 2 * 2**20
    with contextlib.suppress(OSError, ValueError):
        resource.prlimit(pid, resource.RLIMIT_AS, (limit, limit))
        resource.prlimit(pid, resource.RLIMIT_CORE, (0, 0))


def _wait(proc: subprocess.Popen[bytes], sink: _OutputSink, timeout_s: float, memory_mb: int) -> tuple[bool, str]:
    """Wait for the child; return (timed out, reason it was killed)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            proc.wait(timeout=POLL_S)
            return False, ""
        except subprocess.TimeoutExpired:
            pass
        if time.monotonic() > deadline:
            return True, ""
        if sink.flooded:
            return False, ""
        if _resident_mb(proc.pid) > memory_mb:
            return False, (
                f"your code used more than {memory_mb} MiB of memory and was stopped; "
                "is an array far larger than the task needs?"
            )


def _resident_mb(pid: int) -> float:
    """Resident size of `pid` in MiB, 0 when it cannot be read."""
    try:
        pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return 0.0
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill the child's whole process group and reap the child."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(Exception):
        proc.kill()
    proc.wait()


def _sweep_orphans() -> None:
    """Kill and reap processes that were re-parented to us but are no grading process we run."""
    me = os.getpid()
    with _active_lock:
        active = set(_active)
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        pid = int(stat.parent.name)
        if int(fields[1]) == me and pid not in active and _is_orphan_of_grading(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)


def _is_orphan_of_grading(pid: int) -> bool:
    """True for processes whose environment shows they descend from a grading process."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    return b"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1" in environ and b"JAX_PLATFORMS=cpu" in environ


class _OutputSink:
    """Drain the child's output on a thread: keep the head and tail, count the rest."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self._stream = proc.stdout
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0
        self.flooded = False
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        """Read until end of file, never holding more than twice OUTPUT_KEEP."""
        assert self._stream is not None
        while chunk := self._stream.read1(65536):
            self.total += len(chunk)
            if len(self._head) < OUTPUT_KEEP:
                self._head += chunk[: OUTPUT_KEEP - len(self._head)]
            else:
                self._tail = (self._tail + chunk)[-OUTPUT_KEEP:]
            if self.total > OUTPUT_LIMIT:
                self.flooded = True

    def join(self) -> None:
        """Wait briefly for the reader; an escaped holder of the pipe must not hang us."""
        self._thread.join(timeout=2)
        with contextlib.suppress(Exception):
            if self._stream is not None and not self._thread.is_alive():
                self._stream.close()

    def text(self) -> str:
        """What was kept, with a marker where output was dropped."""
        middle = b"\n[... output cut ...]\n" if self._tail else b""
        return (bytes(self._head) + middle + bytes(self._tail)).decode("utf-8", errors="replace")
