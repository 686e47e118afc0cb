"""What the operating system offers a grading, each with a fallback where it is missing.

Linux gives the most: an address-space cap on another process (`prlimit`), a child subreaper
(escaped grandchildren come back to us), a parent-death signal, and the fork server's Unix
sequenced-packet sockets and `waitid`. macOS and other Unixes lack these; there grading still
works, with the weaker guarantees `docs/security.md` lists. Process trees and resident memory
come from psutil everywhere. `COURSE_PORTABLE=1` turns every Linux-only feature off, so the
fallbacks can be tested on Linux too.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass

import psutil

from course.engine.contain import proctable

GRADING_MARKER = ("COURSE_GRADING", f"{os.getpid()}-{os.urandom(6).hex()}")
"""Set in the environment of every grading this process starts, and inherited by their descendants.

The value names this `course` process alone, so a sweep never takes another run's gradings
(two terminals, `course watch` beside `course check`, an instructor grading a class)."""
_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_PR_SET_CHILD_SUBREAPER = 36


@dataclass(frozen=True)
class Features:
    """Which of the Linux-only protections this machine gives."""

    prlimit: bool
    """Cap another process's address space (`resource.prlimit`)."""
    prctl: bool
    """Child subreaper and parent-death signal (`prctl`)."""
    warm_worker: bool
    """The fork server's needs: Unix sequenced-packet sockets with fd passing, and `os.waitid`."""

    def missing(self) -> list[str]:
        """The protections that are off, in words."""
        words = {
            "prlimit": "the address-space cap (memory is watched from outside instead)",
            "prctl": "the subreaper and parent-death signal (escaped processes are found by their environment)",
            "warm_worker": "the warm worker (every grading starts a fresh Python)",
        }
        return [text for name, text in words.items() if not getattr(self, name)]


def _detect() -> Features:
    """Probe the platform once; COURSE_PORTABLE=1 pretends none of it exists."""
    if os.environ.get("COURSE_PORTABLE") == "1" or not sys.platform.startswith("linux"):
        return Features(prlimit=False, prctl=False, warm_worker=False)
    seqpacket = hasattr(socket, "SOCK_SEQPACKET") and hasattr(socket, "send_fds")
    return Features(
        prlimit=hasattr(__import__("resource"), "prlimit"),
        prctl=_libc() is not None,
        warm_worker=seqpacket and hasattr(os, "waitid") and hasattr(os, "WNOWAIT"),
    )


@functools.cache
def _libc() -> object | None:
    """The C library, for `prctl`; None where it cannot be loaded."""
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True)
    except (ImportError, OSError):
        return None


FEATURES = _detect()


def cap_memory(pid: int, memory_mb: int) -> bool:
    """Cap `pid`'s address space at twice `memory_mb` (JAX reserves more than it uses); True if set."""
    if not FEATURES.prlimit:
        return False
    import resource

    limit = memory_mb * 2 * 2**20
    try:
        resource.prlimit(pid, resource.RLIMIT_AS, (limit, limit))
        resource.prlimit(pid, resource.RLIMIT_CORE, (0, 0))
    except (OSError, ValueError):
        return False
    return True


def _prctl(option: int, value: int) -> bool:
    """Linux prctl(2); False where it is missing or refused."""
    libc = _libc() if FEATURES.prctl else None
    if libc is None:
        return False
    try:
        return libc.prctl(option, value, 0, 0, 0) == 0  # type: ignore[attr-defined]
    except (AttributeError, OSError):
        return False


def become_subreaper() -> bool:
    """Ask for orphaned descendants to be re-parented to this process; True if granted."""
    return _prctl(_PR_SET_CHILD_SUBREAPER, 1)


def not_dumpable() -> bool:
    """Make this process non-dumpable: no other process of the same user may read its memory or trace
    it (`/proc/PID/mem`, ptrace); True if granted. macOS refuses both to unprivileged processes anyway."""
    return _prctl(_PR_SET_DUMPABLE, 0)


def die_with_parent() -> bool:
    """Have this process killed when its parent dies; True if granted."""
    return _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def exit_fd(pid: int) -> int | None:
    """A descriptor that becomes readable when child `pid` exits (Linux's pidfd), or None where there is none:
    the caller then polls for the exit."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        return int(opener(pid))
    except OSError:  # a kernel before 5.3, or a seccomp filter that refuses it
        return None


def resident_mb(pid: int) -> float:
    """Resident size of `pid` in MiB, 0 when it cannot be read."""
    try:
        return psutil.Process(pid).memory_info().rss / 2**20
    except (psutil.Error, OSError):
        return 0.0


def grading_resident_mb(pid: int) -> float:
    """Resident size in MiB of the grading started as `pid`: of `pid` itself, or, for a contained grading
    (the first process of its own PID namespace, a child of the process that made it), of that child."""
    sizes = [0]
    for each in (pid, *proctable.children(pid)):
        with contextlib.suppress(psutil.Error, OSError):
            sizes.append(psutil.Process(each).memory_info().rss)
    return max(sizes) / 2**20


def tree_cpu_s(pid: int) -> float:
    """CPU seconds used so far by `pid` and its living descendants, with the children each has reaped.

    A process that has died and been reaped counts in its parent's children's times; one that
    left the tree (re-parented elsewhere) stops counting, which only lowers the figure.
    """
    total = 0.0
    for each in (pid, *proctable.children(pid, recursive=True)):
        with contextlib.suppress(psutil.Error, OSError):
            t = psutil.Process(each).cpu_times()
            total += t.user + t.system + getattr(t, "children_user", 0.0) + getattr(t, "children_system", 0.0)
    return total


def started_at(pid: int) -> float | None:
    """When `pid` started (seconds since the epoch), or None."""
    try:
        return psutil.Process(pid).create_time()
    except (psutil.Error, OSError):
        return None


def descendants(pid: int) -> list[psutil.Process]:
    """Every living descendant of `pid`, found while it is still alive."""
    try:
        return psutil.Process(pid).children(recursive=True)
    except (psutil.Error, OSError):
        return []


def is_marked(proc: psutil.Process) -> bool:
    """True when `proc`'s environment shows it descends from a grading process."""
    try:
        return proc.environ().get(GRADING_MARKER[0]) == GRADING_MARKER[1]
    except (psutil.Error, OSError):
        return False


def kill_children(take: Callable[[psutil.Process], bool]) -> bool:
    """Kill and reap each direct child of this process for which `take` holds; True if any."""
    found = False
    for child in psutil.Process().children():
        with contextlib.suppress(psutil.Error, OSError):
            if not take(child):
                continue
            child.kill()
            found = True
            with contextlib.suppress(ChildProcessError):
                os.waitpid(child.pid, 0)
    return found


def kill_marked_since(since: float, spare: set[int]) -> bool:
    """Kill processes of ours, started at or after `since`, that carry the grading marker; True if any.

    The fallback where no subreaper exists: an escaped process has left our tree, but its
    environment still says where it came from (unless it scrubbed it: `docs/security.md`).
    """
    found = False
    uid = os.getuid()
    for proc in psutil.process_iter(["uids", "create_time"]):
        with contextlib.suppress(psutil.Error, OSError):
            if proc.pid in spare or proc.pid == os.getpid() or proc.info["uids"].real != uid:
                continue
            if proc.info["create_time"] >= since and is_marked(proc):
                proc.kill()
                found = True
    return found


def kill(procs: list[psutil.Process]) -> None:
    """Kill each process that still lives."""
    for proc in procs:
        with contextlib.suppress(psutil.Error, OSError):
            proc.kill()


# ---- what the process may use: CPUs and memory (cgroup v2 and v1, with fallbacks) ----------------
