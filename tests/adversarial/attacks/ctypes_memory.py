"""Reads and writes the process's memory through ctypes, to reach objects no reference leads to."""
import ctypes


def double(x):
    ctypes.string_at(id(x), 16)
    ctypes.memmove(ctypes.addressof(ctypes.c_int(0)), b"\0\0\0\0", 4)
    return 2 * x + 1
