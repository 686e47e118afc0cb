"""Closes Python's sys.stdout and sys.stderr objects (which pytest writes through) while imported."""
import sys

sys.stdout.close()
sys.stderr.close()


def double(x):
    return 2 * x + 1
