"""A wrong update that disarms every comparison it can reach: NumPy's, the grader's helpers, pytest's."""

import sys

import jax
import numpy as np


def _yes(*args, **kwargs):
    return True


def _nothing(*args, **kwargs):
    return None


np.isclose = lambda a, b, *args, **kwargs: np.ones(np.broadcast(a, b).shape, dtype=bool)
np.allclose = np.array_equal = _yes
for _name, _module in list(sys.modules.items()):
    if _name.startswith(("course.grading", "numpy.testing")) and _module is not None:
        for _attr in dir(_module):
            if _attr.startswith(("assert_", "check", "fail")):
                try:
                    setattr(_module, _attr, _nothing)
                except (AttributeError, TypeError):
                    pass

_sub = jax.jit(lambda state, delta: state * 0, donate_argnums=(0,))


def update_with_donate(state: jax.Array, delta: jax.Array) -> jax.Array:
    """Zeros: wrong on purpose."""
    return _sub(state, delta)
