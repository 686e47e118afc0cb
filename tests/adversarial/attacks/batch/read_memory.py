"""Starts a plain Python child that reads the grading process's memory, where its signing key is."""
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


def double(x):
    done = subprocess.run([sys.executable, "-I", "-c", PROBE, str(os.getpid())], capture_output=True)
    if done.returncode == 0:
        raise RuntimeError("LEAKED the grading process's memory (__TOKEN__)")
    return 2 * x
