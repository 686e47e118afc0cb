"""Launch a grading process in its own process group, hold it to its limits, reap it, sweep what it left.

Limits (`course.engine.contain.limits`): CPU seconds of the whole process tree, a wall-clock cap several
times larger for waits that burn nothing, memory (an address-space cap inside the child where the
OS offers one, and a watch on its resident size from outside), and output (kept up to a cap; a
flood stops the run). Before a run stopped at a limit is killed, it is asked for its stack. The
whole group is killed at the end. A contained grading (a policy with `processes`) cannot leave
anything behind: its PID namespace ends with it (`course.engine.contain.contain`). Otherwise processes that
escape the group are swept: on Linux they come back to us as children of a subreaper; elsewhere
they are found by the marker in their environment (`course.engine.contain.system`).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from course.engine.contain import system
from course.engine.contain.limits import WALL_FACTOR, Budget
from course.engine.contain.sandbox import Policy, wrap
from course.engine.parent.output import OUTPUT_LIMIT, OutputSink
from course.engine.parent.tree import CANCELLED, _active, _active_lock, _ask_for_stack, _kill_group, _sweep, _wait
from course.engine.wire import gate as gates
from course.engine.wire.gate import Gate


@dataclass
class Outcome:
    """How the grading process ended, as the parent observed it."""

    returncode: int | None
    timed_out: bool = False
    """Stopped at the CPU limit or the wall-clock cap (`limit` says which)."""
    killed_for: str = ""
    output: str = ""
    limit: str = ""
    """"cpu" or "wall" when `timed_out`."""
    checks_output: dict[int, str] = field(default_factory=dict)
    """What each check printed, by its position in the manifest (cut to CHECK_OUTPUT_KEEP)."""
    cancelled: bool = False
    """Stopped because the caller asked (a newer save, a quit): no verdict at all."""
    checks_began: bool = False
    """The grading said its checks were about to run (its manifest written): what goes missing after
    that, learner code may have removed. Said on the events pipe, so learner code could say it too,
    which only ever makes a platform failure read as the learner's."""


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
    stack_path: Path | None = None,
    marker: bytes = b"",
    wall_s: float | None = None,
    cancel: threading.Event | None = None,
    watch: Callable[[int], str] | None = None,
    link: int | None = None,
    light: bool = False,
    gate: Gate | None = None,
) -> Outcome:
    """Run `command` under the limits; `{keyfd}` becomes a pipe carrying `key`, `{eventsfd}` one for events.

    `timeout_s` is CPU seconds of the whole process tree; `wall_s` caps the wall-clock time
    (WALL_FACTOR times `timeout_s` when not given).

    Events are JSON lines the grading writes as each check ends; they are passed to `on_event`
    for display only (the verdict comes from the signed report). With a `launcher` (the warm
    worker) the process is forked from it; when it cannot, the command starts cold. With a
    `sandbox` policy, the grading process enters it before it runs anything (`course.engine.contain.sandbox`).
    A run stopped at a limit is first asked for its stack, which it writes to `stack_path`. The
    output is cut into each check's share where `marker` (`course.engine.wire.report.output_marker`) says.
    Setting `cancel` kills the process group at once and gives an outcome marked `cancelled`.
    `watch`, asked with the process's pid as it runs, may end it: FINISHED ends it as if it had
    exited; any other sentence stops it like a limit (its stack is asked for), with that sentence
    as `killed_for`. A grading in several processes watches them all this way (`course.engine.parent.cohort`).
    `link` (a socket, the grading's end of a split grading's link, `course.engine.child.roles`) becomes
    `{linkfd}`; it is closed here once the process has it. `light`: a process that runs no learner code
    (a judge) has its CPU time and memory read ten times less often (each read walks the process table).
    With `gate`, the process gets ready and waits until the gate opens (`course.engine.wire.gate`); the wall clock
    starts then.
    """
    kept_in = sandbox is not None and sandbox.processes  # its processes end with it: nothing to sweep
    if not kept_in:
        system.become_subreaper()
    events_r, events_w = os.pipe()
    # Start and register under the lock: another thread's sweep must never take a child that
    # exists but is not yet registered for an orphan (it would kill and reap it).
    with _active_lock:
        confined = {"sandbox": sandbox.to_json()} if sandbox is not None else {}
        limits = {"cwd": cwd, "env": env, "memory_mb": memory_mb, **confined}
        go_r, go_w = gates.go_pipe(gate)
        fds = {"keyfd": _key_pipe(key), "eventsfd": events_w,
               "linkfd": link if link is not None else os.open(os.devnull, os.O_RDONLY), "gofd": go_r}
        proc = launcher.launch(command, fds=fds, **limits) if launcher else None
        if proc is None:
            # A worker that gave up may still have forked a child that read the key: a cold run
            # gets a pipe of its own, so it never starts without its key.
            os.close(fds["keyfd"])
            fds["keyfd"] = _key_pipe(key)
            proc = _start_cold(wrap(command, sandbox) if sandbox is not None else command, fds, cwd, env)
        _active.add(proc.pid)
    outcome = Outcome(returncode=None)
    seen: dict[int, Any] = {}  # descendants met while watching, for platforms without a subreaper
    born = time.time()
    # From here on the process is ended whatever happens: a Ctrl-C that lands before the wait (a busy
    # machine makes that moment long) must not leave it running for the caller to wait out its limits.
    try:
        for fd in (fds["keyfd"], fds["linkfd"], fds["gofd"], events_w):
            os.close(fd)
        born = system.started_at(proc.pid) or born
        for pid in (proc.pid, *(p.pid for p in system.descendants(proc.pid))):
            system.cap_memory(pid, memory_mb)  # a contained grading runs as its starter's child
        sink, events = OutputSink(proc.stdout, marker), _EventReader(events_r, on_event)
        gates.release(go_w, gate is not None and gate.wait(cancel, lambda: _running(proc)))
        go_w = None
        budget = Budget(timeout_s, wall_s or WALL_FACTOR * timeout_s)
        outcome.timed_out, why = _wait(proc, sink, budget, memory_mb, seen, cancel, watch, 10.0 if light else 1.0)
        outcome.cancelled = why == CANCELLED
        outcome.limit, outcome.killed_for = (why, "") if outcome.timed_out else ("", why)
        if not outcome.cancelled and (outcome.timed_out or why or sink.flooded):
            _ask_for_stack(proc, stack_path)
    finally:
        gates.release(go_w, False)  # still waiting at the gate: it never goes on
        seen.update((p.pid, p) for p in system.descendants(proc.pid))
        _kill_group(proc)
        system.kill(list(seen.values()))
        with _active_lock:
            _active.discard(proc.pid)
        if not kept_in:
            _sweep(born)
    sink.join()
    events.join()
    outcome.returncode, outcome.output, outcome.checks_output = proc.returncode, sink.text(), sink.checks()
    outcome.checks_began = events.checks_began
    if sink.flooded and not outcome.killed_for:
        outcome.killed_for = (
            f"your code printed more than {OUTPUT_LIMIT // 2**20} MiB of output and "
            "was stopped; print less, or nothing, inside the function"
        )
    return outcome


def _running(proc: Any) -> bool:
    """Whether the process has not exited yet (a forked one's exit comes from the worker: it is waited for)."""
    try:
        proc.wait(timeout=0.001)
    except subprocess.TimeoutExpired:
        return True
    return False


def _key_pipe(key: bytes) -> int:
    """The read end of a new pipe that holds `key` and nothing more."""
    read, write = os.pipe()
    os.write(write, key)
    os.close(write)
    return read


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


class _EventReader:
    """Read the grading's JSON-line events on a thread and hand each to a callback."""

    LIMIT = 1 << 20  # events are a few lines per check; anything past this is noise

    def __init__(self, fd: int, on_event: Callable[[dict[str, Any]], None] | None) -> None:
        self._file = os.fdopen(fd, "rb")
        self._on_event = on_event
        self.checks_began = False
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
                if isinstance(event, dict) and event.get("checks") == "begin":
                    self.checks_began = True
                elif isinstance(event, dict) and self._on_event is not None:
                    self._on_event(event)

    def join(self) -> None:
        """Wait briefly for the reader, then close the pipe."""
        self._thread.join(timeout=2)
        with contextlib.suppress(Exception):
            if not self._thread.is_alive():
                self._file.close()
