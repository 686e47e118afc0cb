"""Starts the buckets at 32 rows, so a batch of one row does the work of 32; must fail test_bucket_rule."""

import jax
import jax.numpy as jnp


def bucket_size(n):
    """The next power of two, but never fewer than 32 rows."""
    return max(32, 1 << (n - 1).bit_length())


@jax.jit
def _softmax(x, t):
    """softmax(x / t) over the rows of x."""
    return jax.nn.softmax(x / t, axis=-1)


def scaled_softmax(x, temperature):
    """Pad, run, slice."""
    n = x.shape[0]
    padded = jnp.pad(x, ((0, bucket_size(n) - n), (0, 0)))
    return _softmax(padded, jnp.asarray(temperature, jnp.float32))[:n]
