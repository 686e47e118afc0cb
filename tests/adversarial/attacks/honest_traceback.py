"""An honest solution that prints a traceback of an exception it handles itself."""
import traceback


def double(x):
    try:
        int("not a number")
    except ValueError:
        traceback.print_exc()
    return 2 * x
