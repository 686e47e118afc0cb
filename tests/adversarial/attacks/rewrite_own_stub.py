"""Rewrites its own file with a correct solution while a wrong one is being graded."""
import pathlib

pathlib.Path(__file__).write_text("def double(x):\n    return 2 * x  # rewritten by __TOKEN__\n")


def double(x):
    return 2 * x + 1
