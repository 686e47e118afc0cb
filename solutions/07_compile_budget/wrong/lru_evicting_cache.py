"""Keeps the jitted program of each bucket in an lru_cache of 3 entries, so a bucket evicted earlier is built and compiled again; must fail test_compiles_per_batch_size."""

import functools

import jax
import jax.numpy as jnp


def bucket_size(n):
    """The next power of two at or above n, at least 16."""
    return max(16, 1 << (n - 1).bit_length())


@functools.lru_cache(maxsize=3)
def _program(rows):
    """The jitted softmax of one bucket; only the three most recent buckets are kept."""
    return jax.jit(lambda x, t: jax.nn.softmax(x / t, axis=-1))


def scaled_softmax(x, temperature):
    """Pad to the bucket, run its program, slice."""
    n = x.shape[0]
    rows = bucket_size(n)
    padded = jnp.pad(x, ((0, rows - n), (0, 0)))
    return _program(rows)(padded, jnp.asarray(temperature, jnp.float32))[:n]
