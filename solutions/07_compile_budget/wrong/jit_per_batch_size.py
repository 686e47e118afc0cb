"""Caches a new jitted function per batch size n (functools.lru_cache keyed by n), so every size traces and compiles anew despite the padding; must fail test_compiles_per_batch_size."""

import functools

import jax
import jax.numpy as jnp


def bucket_size(n):
    """The next power of two at or above n, at least 16."""
    return max(16, 1 << (n - 1).bit_length())


@functools.lru_cache(maxsize=None)
def _program_for(n):
    """A jitted softmax for batches of n rows."""

    def run(x, t):
        return jax.nn.softmax(x / t, axis=-1)

    return jax.jit(run)


def scaled_softmax(x, temperature):
    """Pad to the bucket, run the program kept for this n, slice."""
    n = x.shape[0]
    padded = jnp.pad(x, ((0, bucket_size(n) - n), (0, 0)))
    return _program_for(n)(padded, jnp.asarray(temperature, jnp.float32))[:n]
