"""Double-forks into a new session with a scrubbed environment to escape the process group."""
import os
import sys


def _escape():
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            code = "import time; time.sleep(120)  # __TOKEN__"
            os.execve(sys.executable, [sys.executable, "-c", code], {"COURSE_ATTACK": "__TOKEN__"})
        os._exit(0)


def double(x):
    _escape()
    return 2 * x + 1
