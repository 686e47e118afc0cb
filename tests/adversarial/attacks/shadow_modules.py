"""Wrong answer graded with conftest.py, pytest.py, jax.py and numpy.py placed beside it."""
import numpy  # noqa: F401  - must be the real NumPy, not the file beside this one


def double(x):
    return 2 * x + 1
