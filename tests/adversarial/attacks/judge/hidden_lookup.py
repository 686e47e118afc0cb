"""A `double` that looks for the hidden checks in its own process (module names, every loaded module's
names) and says what it found by returning a wrong value."""

import sys


def _found():
    names = [n for n in list(sys.modules) if n.endswith("_hidden") or ".hidden" in n]
    functions = [m for m in list(sys.modules.values()) if "test_negative" in getattr(m, "__dict__", {})]
    return names or functions


def double(x):
    """Twice x, unless the hidden checks can be seen from here."""
    return 2 * x + 1 if _found() else 2 * x
