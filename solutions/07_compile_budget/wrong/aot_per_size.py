"""Keeps an ahead-of-time compiled program per exact batch size in a dict, so every new size is a new compile; must fail test_compiles_per_batch_size."""

import jax
import jax.numpy as jnp

_compiled = {}


def bucket_size(n: int) -> int:
    """The next power of two at or above n, at least 16."""
    return max(16, 1 << (n - 1).bit_length())


def _softmax(x, t):
    """softmax(x / t) over the rows of x."""
    return jax.nn.softmax(x / t, axis=-1)


def scaled_softmax(x, temperature):
    """Run the program compiled for exactly this shape (compiling it the first time)."""
    t = jnp.asarray(temperature, jnp.float32)
    if x.shape not in _compiled:
        _compiled[x.shape] = jax.jit(_softmax).lower(x, t).compile()
    return _compiled[x.shape](x, t)
