"""A grading's process tree, from the parent: watched against its limits, killed as a group, swept after."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from course.engine.contain import system
from course.engine.contain.limits import STACK_SIGNAL, Budget
from course.engine.parent.output import OutputSink

POLL_S = 0.05
CPU_POLL_S = 0.2
MEMORY_POLL_S = 0.1
"""How often a grading's resident size is read (a walk of the process table); the address-space cap
stops a sudden allocation at once, this watch a slow growth past `memory_mb`."""
"""How often the process tree's CPU time is read (a walk of the process table)."""
STACK_WAIT_S = 2.0
"""How long a run stopped at a limit has to write its stack before it is killed."""
SWEEP_S = 30.0
"""How long a sweep goes on while each round still finds something: a chain of processes that keeps
replacing itself loses a round only by luck, so rounds are bounded by time, not counted."""
CANCELLED = "cancelled"
FINISHED = "finished"
"""What a `watch` says of a process that has reported all it will: end it now, as if it had exited."""
_active: set[int] = set()
_active_lock = threading.Lock()


def stop_all() -> None:
    """Kill every grading process group we run now (after Ctrl-C), so no thread waits out a timeout."""
    with _active_lock:
        pids = list(_active)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)


def _wait(proc: Any, sink: OutputSink, budget: Budget, memory_mb: int, seen: dict[int, Any],
          cancel: threading.Event | None = None, watch: Callable[[int], str] | None = None,
          slower: float = 1.0) -> tuple[bool, str]:
    """Wait for the child; return (timed out, "cpu" or "wall"), or (False, why it was killed or CANCELLED).

    The CPU time of the process tree is read every CPU_POLL_S, so it is the learner's work that
    counts, not the machine's load. Without a subreaper, descendants are noted as they appear,
    so one that later leaves the tree (a double fork) can still be killed at the end.
    """
    start = time.monotonic()
    deadline, next_cpu, next_memory = start + budget.wall_s, start + CPU_POLL_S * slower, start
    while True:
        try:
            proc.wait(timeout=POLL_S)
            return False, ""
        except subprocess.TimeoutExpired:
            pass
        if cancel is not None and cancel.is_set():
            return False, CANCELLED
        said = watch(proc.pid) if watch is not None else ""
        if said:
            return False, "" if said == FINISHED else said
        if not system.FEATURES.prctl:
            seen.update((p.pid, p) for p in system.descendants(proc.pid))
        now = time.monotonic()
        if now >= next_cpu:
            next_cpu = now + CPU_POLL_S * slower
            if system.tree_cpu_s(proc.pid) > budget.cpu_s:
                return True, "cpu"
        if now > deadline:
            return True, "wall"
        if sink.flooded:
            return False, ""
        if now < next_memory:
            continue
        next_memory = now + MEMORY_POLL_S * slower
        if system.grading_resident_mb(proc.pid) > memory_mb:
            return False, (
                f"your code used more than {memory_mb} MiB of memory and was stopped; "
                "is an array far larger than the task needs?"
            )


def _ask_for_stack(proc: Any, stack_path: Path | None) -> None:
    """Ask the grading process for its threads' stacks and give it a moment to write them: it is
    about to be killed at a limit, and the learner is told where their code was."""
    if stack_path is None:
        return
    try:
        before = stack_path.stat().st_size
        os.kill(proc.pid, STACK_SIGNAL)
    except OSError:
        return
    deadline, size = time.monotonic() + STACK_WAIT_S, before
    while time.monotonic() < deadline:
        time.sleep(POLL_S / 5)
        try:
            now = stack_path.stat().st_size
        except OSError:
            return
        if now > before and now == size:  # written, and no longer growing
            return
        size = now


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
    """Kill what escaped the grading's group, round after round until one finds nothing (at most SWEEP_S).

    An escaped process comes back to a subreaper only once its parent has died, which happens
    just after the group is killed, hence the rounds.
    """
    deadline = time.monotonic() + SWEEP_S
    while time.monotonic() < deadline:
        # Hold the lock so no grading process is started (and not yet registered) meanwhile.
        with _active_lock:
            if system.FEATURES.prctl:
                found = system.kill_children(lambda p: p.pid not in _active and _is_escapee(p, born))
            else:
                found = system.kill_marked_since(born, spare=set(_active))
        if not found:
            return
        time.sleep(POLL_S / 5)


def _own_process() -> bool:
    """True in the `course` command itself, which starts nothing but gradings; False in a host process
    (a Jupyter kernel calling `course.check`), whose own children must never be taken for a grading's."""
    return bool(getattr(sys.modules.get("course.entry"), "RUNNING", False))


def _is_escapee(proc: Any, born: float) -> bool:
    """True for a child of ours that no thread of ours started: one whose environment shows it descends
    from a grading process, or, in the `course` command (which starts nothing else meanwhile), one born
    during this grading (an escapee may scrub its environment). Only where PID namespaces are missing."""
    started = system.started_at(proc.pid)
    return (_own_process() and started is not None and started >= born) or system.is_marked(proc)
