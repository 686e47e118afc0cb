"""A correct `scaled_softmax` keeping one jitted program per bucket in a dict, with the bucket from `math`."""

import math

import jax
import jax.numpy as jnp

_programs = {}


def bucket_size(n: int) -> int:
    """2 ** ceil(log2(n)), never below 16."""
    return 2 ** max(4, math.ceil(math.log2(n)))


def _program(rows: int):
    """The jitted softmax for batches padded to `rows` rows, built the first time it is needed."""
    if rows not in _programs:
        _programs[rows] = jax.jit(lambda x, t: jax.nn.softmax(x / t, axis=-1))
    return _programs[rows]


def scaled_softmax(x, temperature):
    """softmax(x / temperature) on x padded to its bucket; a Python float temperature is one cache key."""
    n = x.shape[0]
    rows = bucket_size(n)
    return _program(rows)(jnp.pad(x, [(0, rows - n), (0, 0)]), float(temperature))[:n]
