"""Launch a grading process in its own process group, hold it to its limits, reap it, sweep what it left.

Limits: wall-clock time (the whole group is killed), memory (an address-space cap inside the
child where the OS offers one, and a watch on its resident size from outside), and output
(kept up to a cap; a flood stops the run). Processes that escape the group are swept: on Linux
they come back to us as children of a subreaper; elsewhere they are found by the marker in
their environment (`course.engine.system`).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from course.engine import system
from course.engine.sandbox import Policy, wrap

OUTPUT_KEEP = 64 * 1024
OUTPUT_LIMIT = 32 * 1024 * 1024
POLL_S = 0.05
SWEEP_ROUNDS = 20
CANCELLED = "cancelled"
_active: set[int] = set()
_active_lock = threading.Lock()


@dataclass
class Outcome:
    """How the grading process ended, as the parent observed it."""

    returncode: int | None
    timed_out: bool = False
    killed_for: str = ""
    output: str = ""
    cancelled: bool = False
    """Stopped because the caller asked (a newer save, a quit): no verdict at all."""


class Launcher(Protocol):
    """Starts a grading process some other way (the warm worker); None means start it cold.

    The object returned acts like a `Popen`: `pid` (also its process group), `stdout`,
    `wait(timeout)`, `kill()`, `returncode`, and `release()` once its group has been killed.
    """

    def launch(self, command: list[str], *, fds: dict[str, int], cwd: Path, env: dict[str, str],
               memory_mb: int, sandbox: str | None = None) -> Any: ...


def run_isolated(
    command: list[str],
    *,
    key: bytes,
    cwd: Path,
    env: dict[str, str],
    timeout_s: float,
    memory_mb: int,
    launcher: Launcher | None = None,
    on_event: Callable[[dict[str, Any]], None] | None = None,
    sandbox: Policy | None = None,
    cancel: threading.Event | None = None,
) -> Outcome:
    """Run `command` under the limits; `{keyfd}` becomes a pipe carrying `key`, `{eventsfd}` one for events.

    Events are JSON lines the grading writes as each check ends; they are passed to `on_event`
    for display only (the verdict comes from the signed report). With a `launcher` (the warm
    worker) the process is forked from it; when it cannot, the command starts cold. With a
    `sandbox` policy, the grading process enters it before it runs anything (`course.engine.sandbox`).
    Setting `cancel` kills the process group at once and gives an outcome marked `cancelled`.
    """
    system.become_subreaper()
    key_r, key_w = os.pipe()
    os.write(key_w, key)
    os.close(key_w)
    events_r, events_w = os.pipe()
    fds = {"keyfd": key_r, "eventsfd": events_w}
    # Start and register under the lock: another thread's sweep must never take a child that
    # exists but is not yet registered for an orphan (it would kill and reap it).
    with _active_lock:
        confined = {"sandbox": sandbox.to_json()} if sandbox is not None else {}
        limits = {"cwd": cwd, "env": env, "memory_mb": memory_mb, **confined}
        proc = launcher.launch(command, fds=fds, **limits) if launcher else None
        proc = proc or _start_cold(wrap(command, sandbox) if sandbox is not None else command, fds, cwd, env)
        _active.add(proc.pid)
    os.close(key_r)
    os.close(events_w)
    born = system.started_at(proc.pid) or time.time()
    system.cap_memory(proc.pid, memory_mb)
    sink, events = _OutputSink(proc.stdout), _EventReader(events_r, on_event)
    outcome = Outcome(returncode=None)
    seen: dict[int, Any] = {}  # descendants met while watching, for platforms without a subreaper
    try:
        outcome.timed_out, outcome.killed_for = _wait(proc, sink, timeout_s, memory_mb, seen, cancel)
        outcome.cancelled = outcome.killed_for == CANCELLED
    finally:
        seen.update((p.pid, p) for p in system.descendants(proc.pid))
        _kill_group(proc)
        system.kill(list(seen.values()))
        with _active_lock:
            _active.discard(proc.pid)
        _sweep(born)
    sink.join()
    events.join()
    outcome.returncode, outcome.output = proc.returncode, sink.text()
    if sink.flooded and not outcome.killed_for:
        outcome.killed_for = (
            f"your code printed more than {OUTPUT_LIMIT // 2**20} MiB of output and "
            "was stopped; print less, or nothing, inside the function"
        )
    return outcome


def _start_cold(command: list[str], fds: dict[str, int], cwd: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """Start the command as a fresh process in its own session and process group."""
    argv = [fill(a, fds) for a in command]
    return subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        pass_fds=tuple(fds.values()),
    )


def fill(arg: str, fds: dict[str, int]) -> str:
    """Replace each `{name}` placeholder in a command-line argument by its descriptor number."""
    for name, fd in fds.items():
        arg = arg.replace("{" + name + "}", str(fd))
    return arg


def stop_all() -> None:
    """Kill every grading process group we run now (after Ctrl-C), so no thread waits out a timeout."""
    with _active_lock:
        pids = list(_active)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)


def _wait(proc: Any, sink: _OutputSink, timeout_s: float, memory_mb: int, seen: dict[int, Any],
          cancel: threading.Event | None = None) -> tuple[bool, str]:
    """Wait for the child; return (timed out, reason it was killed).

    Without a subreaper, descendants are noted as they appear, so one that later leaves the
    tree (a double fork) can still be killed at the end.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            proc.wait(timeout=POLL_S)
            return False, ""
        except subprocess.TimeoutExpired:
            pass
        if cancel is not None and cancel.is_set():
            return False, CANCELLED
        if not system.FEATURES.prctl:
            seen.update((p.pid, p) for p in system.descendants(proc.pid))
        if time.monotonic() > deadline:
            return True, ""
        if sink.flooded:
            return False, ""
        if system.resident_mb(proc.pid) > memory_mb:
            return False, (
                f"your code used more than {memory_mb} MiB of memory and was stopped; "
                "is an array far larger than the task needs?"
            )


def _kill_group(proc: Any) -> None:
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


def _sweep(born: float) -> None:
    """Kill what escaped the grading's group, for a few rounds, until a round finds nothing.

    An escaped process comes back to a subreaper only once its parent has died, which happens
    just after the group is killed, hence the rounds.
    """
    for _ in range(SWEEP_ROUNDS):
        # Hold the lock so no grading process is started (and not yet registered) meanwhile.
        with _active_lock:
            if system.FEATURES.prctl:
                found = system.kill_children(lambda p: p.pid not in _active and _is_escapee(p, born))
            else:
                found = system.kill_marked_since(born, spare=set(_active))
        if not found:
            return
        time.sleep(POLL_S / 5)


def _is_escapee(proc: Any, born: float) -> bool:
    """True for a child of ours that no thread of ours started: one born during this grading
    (grading is all this process starts meanwhile, and an escapee may scrub its environment),
    or one whose environment shows it descends from a grading process."""
    started = system.started_at(proc.pid)
    return (started is not None and started >= born) or system.is_marked(proc)


class _OutputSink:
    """Drain the child's output on a thread: keep the head and tail, count the rest."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0
        self.flooded = False
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        """Read until end of file, never holding more than twice OUTPUT_KEEP."""
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
            if not self._thread.is_alive():
                self._stream.close()

    def text(self) -> str:
        """What was kept, with a marker where output was dropped."""
        middle = b"\n[... output cut ...]\n" if self._tail else b""
        return (bytes(self._head) + middle + bytes(self._tail)).decode("utf-8", errors="replace")


class _EventReader:
    """Read the grading's JSON-line events on a thread and hand each to a callback."""

    LIMIT = 1 << 20  # events are a few lines per check; anything past this is noise

    def __init__(self, fd: int, on_event: Callable[[dict[str, Any]], None] | None) -> None:
        self._file = os.fdopen(fd, "rb")
        self._on_event = on_event
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        """Parse one event per line until end of file; malformed lines are skipped."""
        seen = 0
        for line in self._file:
            seen += len(line)
            if seen > self.LIMIT:
                break
            with contextlib.suppress(ValueError):
                event = json.loads(line)
                if isinstance(event, dict) and self._on_event is not None:
                    self._on_event(event)

    def join(self) -> None:
        """Wait briefly for the reader, then close the pipe."""
        self._thread.join(timeout=2)
        with contextlib.suppress(Exception):
            if not self._thread.is_alive():
                self._file.close()
