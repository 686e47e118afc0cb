"""Rounds the batch up to a multiple of 64 rows: 16 programs for 1..1024, and one row padded to 64; must fail test_bucket_rule."""

import jax
import jax.numpy as jnp


def bucket_size(n):
    """n rounded up to the next multiple of 64."""
    return -(-n // 64) * 64


@jax.jit
def _softmax(x, t):
    """softmax(x / t) over the rows of x."""
    return jax.nn.softmax(x / t, axis=-1)


def scaled_softmax(x, temperature):
    """Pad, run, slice."""
    n = x.shape[0]
    padded = jnp.pad(x, ((0, bucket_size(n) - n), (0, 0)))
    return _softmax(padded, jnp.asarray(temperature, jnp.float32))[:n]
