"""Leaves processes behind: a double fork into a new session that keeps replacing itself for a minute."""
import os
import sys


def _chain():
    """Fork, and in the child keep forking a successor and exiting, with the token on the command line."""
    if os.fork() == 0:
        os.setsid()
        code = ("import os, time\nend = time.monotonic() + 60\nwhile time.monotonic() < end:\n"
                "    if os.fork():\n        os._exit(0)\n    time.sleep(0.005)\n")
        os.execv(sys.executable, [sys.executable, "-c", code, "__TOKEN__"])


def double(x):
    _chain()
    return 2 * x
