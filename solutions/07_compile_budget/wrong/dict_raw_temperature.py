"""Keeps a jit per bucket in a dict but hands it the temperature as the caller gave it, so each Python or NumPy type is a new compile; must fail test_temperature_types."""

import jax
import jax.numpy as jnp

_by_bucket = {}


def bucket_size(n: int) -> int:
    """Double from 16 until n fits."""
    b = 16
    while b < n:
        b *= 2
    return b


def scaled_softmax(x, temperature):
    """Pad to the bucket, run that bucket's jit, slice."""
    n = x.shape[0]
    b = bucket_size(n)
    fn = _by_bucket.setdefault(b, jax.jit(lambda v, t: jax.nn.softmax(v / t, axis=-1)))
    return fn(jnp.pad(x, ((0, b - n), (0, 0))), temperature)[:n]
