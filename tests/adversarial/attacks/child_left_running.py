"""Starts a child process that outlives the function (a wrong value is returned)."""
import os
import subprocess
import sys


def double(x):
    env = dict(os.environ, COURSE_ATTACK="__TOKEN__")
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)  # __TOKEN__"], env=env)
    return 2 * x + 1
