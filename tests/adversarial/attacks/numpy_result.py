"""Computes the right values with NumPy and returns a NumPy array, not a jax.Array."""
import numpy as np


def double_array(x):
    return 2 * np.asarray(x)
