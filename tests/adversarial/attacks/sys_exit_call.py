"""Calls sys.exit(0) inside the function instead of returning."""
import sys


def double(x):
    sys.exit(0)
