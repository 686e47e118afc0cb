"""Builds `jax.jit` of a fresh lambda inside the function, so every call compiles again; must fail test_compiles_per_batch_size."""

import jax
import jax.numpy as jnp


def bucket_size(n: int) -> int:
    """The next power of two at or above n, at least 16."""
    return max(16, 1 << (n - 1).bit_length())


def scaled_softmax(x, temperature):
    """Pad, run through a jit made for this call, slice."""
    n = x.shape[0]
    padded = jnp.pad(x, ((0, bucket_size(n) - n), (0, 0)))
    softmax = jax.jit(lambda a, t: jax.nn.softmax(a / t, axis=-1))
    return softmax(padded, jnp.asarray(temperature, jnp.float32))[:n]
