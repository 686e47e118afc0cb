"""Ignores SIGTERM and SIGINT, then loops forever: a polite stop would never end it."""
import signal

signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGINT, signal.SIG_IGN)


def double(x):
    while True:
        pass
