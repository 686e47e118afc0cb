"""Asks for one array far beyond the memory limit (8 GiB)."""


def double(x):
    hog = bytearray(8 * 2**30)
    return 2 * x + len(hog)
