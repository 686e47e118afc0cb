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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

OUTPUT_KEEP = 64 * 1024
OUTPUT_LIMIT = 32 * 1024 * 1024
POLL_S = 0.05
_PR_SET_CHILD_SUBREAPER = 36
SWEEP_ROUNDS = 20
GRADING_MARKER = "COURSE_GRADING=1"
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
    launcher: Launcher | None = None,
) -> Outcome:
    """Run `command` (with `{keyfd}` replaced by a pipe carrying `key`) under the limits.

    With a `launcher` (the warm worker) the process is forked from it instead of started cold;
    when it cannot, the command starts cold. Either way the limits below are ours to enforce.
    """
    _become_subreaper()
    read_fd, write_fd = os.pipe()
    os.write(write_fd, key)
    os.close(write_fd)
    argv = [a.replace("{keyfd}", str(read_fd)) for a in command]
    # Start and register under the lock: another thread's sweep must never take a child that
    # exists but is not yet registered for an orphan (it would kill and reap it).
    with _active_lock:
        proc = launcher.launch(command, key_fd=read_fd, cwd=cwd, env=env, memory_mb=memory_mb) if launcher else None
        proc = proc or subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            pass_fds=(read_fd,),
        )
        _active.add(proc.pid)
    os.close(read_fd)
    born = _start_ticks(proc.pid)
    cap_memory(proc.pid, memory_mb)
    sink = _OutputSink(proc)
    outcome = Outcome(returncode=None)
    try:
        outcome.timed_out, outcome.killed_for = _wait(proc, sink, timeout_s, memory_mb)
    finally:
        _kill_group(proc)
        with _active_lock:
            _active.discard(proc.pid)
        _sweep_orphans(born)
    sink.join()
    outcome.returncode = proc.returncode
    outcome.output = sink.text()
    if sink.flooded and not outcome.killed_for:
        outcome.killed_for = (
            f"your code printed more than {OUTPUT_LIMIT // 2**20} MiB of output and "
            "was stopped; print less, or nothing, inside the function"
        )
    return outcome


def stop_all() -> None:
    """Kill every grading process group we run now (after Ctrl-C), so no thread waits out a timeout."""
    with _active_lock:
        pids = list(_active)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)


def cap_memory(pid: int, memory_mb: int) -> None:
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
    # A warm worker's child stays a zombie (its pid, hence its group id, cannot be reused)
    # until we have killed the group; only then may the worker reap it.
    release = getattr(proc, "release", None)
    if release is not None:
        release()


class Launcher(Protocol):
    """Starts a grading process some other way (the warm worker); None means start it cold.

    The object returned acts like a `Popen`: `pid` (also its process group), `stdout`,
    `wait(timeout)`, `kill()`, `returncode`, and `release()` once its group has been killed.
    """

    def launch(self, command: list[str], *, key_fd: int, cwd: Path, env: dict[str, str], memory_mb: int) -> Any: ...


def start_helper(argv: list[str], **popen_kwargs: Any) -> subprocess.Popen[bytes]:
    """Start a long-lived helper of ours (the warm worker), registered so that no sweep takes it."""
    with _active_lock:
        proc = subprocess.Popen(argv, **popen_kwargs)
        _active.add(proc.pid)
    return proc


def forget_helper(pid: int) -> None:
    """The helper `pid` has ended; a later process with its pid is no longer ours."""
    with _active_lock:
        _active.discard(pid)


def _start_ticks(pid: int) -> int | None:
    """When `pid` started, in clock ticks since boot; None when it cannot be read."""
    fields = _stat_fields(pid)
    return int(fields[19]) if fields else None


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (state first), or None."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _sweep_orphans(born: int | None) -> None:
    """Kill and reap processes re-parented to us that descend from grading, until none is left.

    An escaped process comes back to us only once its parent has died, which happens just after
    the group is killed, so sweep a few rounds until one finds nothing.
    """
    for _ in range(SWEEP_ROUNDS):
        if not _sweep_once(born):
            return
        time.sleep(POLL_S / 5)


def _sweep_once(born: int | None) -> bool:
    """One pass over /proc; True when something was killed or reaped."""
    # Hold the lock so no grading process is started (and not yet registered) meanwhile.
    with _active_lock:
        return kill_children(lambda pid, fields: pid not in _active and _is_orphan_of_grading(pid, fields, born))


def kill_children(take: Callable[[int, list[str]], bool]) -> bool:
    """Kill and reap each child of this process for which `take(pid, stat fields)` holds; True if any."""
    me, found = os.getpid(), False
    for stat in Path("/proc").glob("[0-9]*/stat"):
        pid = int(stat.parent.name)
        fields = _stat_fields(pid)
        if not fields or int(fields[1]) != me or not take(pid, fields):
            continue
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        found = True
    return found


def _is_orphan_of_grading(pid: int, fields: list[str], born: int | None) -> bool:
    """True for a child of ours that no thread of ours started: one born during this grading
    run (grading is all this process starts meanwhile, and an escapee may scrub its
    environment), or one whose environment shows it descends from a grading process."""
    if born is not None and int(fields[19]) >= born:
        return True
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    return GRADING_MARKER.encode() in environ


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
