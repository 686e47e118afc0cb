"""Starts a plain Python child that reads its parent's memory, where the grading process keeps its key.

A child is outside the audit hooks that guard the grading process, so only the operating system can
stop it: the grading process is non-dumpable, and runs with no capability. If the read works, the
function returns a wrong value, so a pass means the memory stayed out of reach.
"""
import os
import subprocess
import sys

PROBE = r"""
import sys
pid = sys.argv[1]
try:
    with open(f"/proc/{pid}/maps") as fh:
        start = int(next(l for l in fh if l.split()[1].startswith("r")).split("-")[0], 16)
    with open(f"/proc/{pid}/mem", "rb", 0) as mem:
        mem.seek(start)
        sys.exit(0 if mem.read(16) else 1)
except OSError:
    sys.exit(1)
"""


def _memory_is_readable() -> bool:
    done = subprocess.run([sys.executable, "-I", "-c", PROBE, str(os.getpid())], capture_output=True)  # __TOKEN__
    return done.returncode == 0


def double(x):
    return 2 * x + 1 if _memory_is_readable() else 2 * x
