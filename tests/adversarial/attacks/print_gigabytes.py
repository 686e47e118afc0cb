"""Prints gigabytes, hoping to fill the parent's memory or disk."""
import sys


def double(x):
    line = "x" * (1 << 20) + "\n"
    for _ in range(8 * 1024):
        sys.stdout.write(line)
    return 2 * x
