"""Leaves a non-daemon thread spinning after returning (a wrong value), hoping to hang the grader."""
import threading
import time


def _spin():
    while True:
        time.sleep(0.01)


def double(x):
    threading.Thread(target=_spin, name="__TOKEN__").start()
    return 2 * x + 1
