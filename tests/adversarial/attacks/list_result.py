"""Returns the right values as a Python list."""


def double_array(x):
    return [2 * float(v) for v in x]
