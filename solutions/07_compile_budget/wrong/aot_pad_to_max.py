"""Compiles ahead of time, as a table of executables would, but pads every batch to 1024 rows, so small batches run on 1024 rows; an AOT executable cannot be traced, so only the programs that ran show it; must fail test_rows_run."""

import math

import jax
import jax.numpy as jnp
import numpy as np

_compiled = {}


def bucket_size(n: int) -> int:
    """The next power of two at or above n, at least 16."""
    return max(16, 2 ** math.ceil(math.log2(n)))


def _softmax(x, inv_t):
    """Softmax of x * inv_t along the last axis."""
    return jax.nn.softmax(x * inv_t, axis=-1)


def _executable(width: int):
    """One `jit(_softmax).lower(...).compile()` for 1024 rows, kept for every later call."""
    if width not in _compiled:
        spec = jax.ShapeDtypeStruct((1024, width), jnp.float32)
        _compiled[width] = jax.jit(_softmax).lower(spec, jax.ShapeDtypeStruct((), jnp.float32)).compile()
    return _compiled[width]


def scaled_softmax(x, temperature):
    """Pad to 1024 rows and run the one executable."""
    n, width = x.shape
    full = jnp.zeros((1024, width), jnp.float32).at[:n].set(x)
    inv_t = np.float32(1.0) / np.float32(np.asarray(temperature))
    return _executable(width)(full, inv_t)[:n]
