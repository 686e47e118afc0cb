"""Leaves a process that keeps replacing itself: in a new session, it forks a successor and exits, again and
again for a minute, so that a sweep that first lists processes and then kills them always misses the newest."""
import os
import sys


def _chain():
    if os.fork() == 0:
        os.setsid()
        code = ("import os, time\nend = time.monotonic() + 60\nwhile time.monotonic() < end:\n"
                "    if os.fork():\n        os._exit(0)\n    time.sleep(0.005)\n")
        os.execv(sys.executable, [sys.executable, "-c", code, "__TOKEN__"])


def double(x):
    _chain()
    return 2 * x
