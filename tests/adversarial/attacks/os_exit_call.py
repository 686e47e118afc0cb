"""Ends the process with os._exit(0) inside the function."""
import os


def double(x):
    os._exit(0)
