"""Computes the softmax op by op with no `jax.jit` at all, so no compiled program of its own ever runs; must fail test_rows_run."""

import jax
import jax.numpy as jnp


def bucket_size(n: int) -> int:
    """The next power of two at or above n, at least 16."""
    return max(16, 1 << (n - 1).bit_length())


def scaled_softmax(x, temperature):
    """Pad, softmax eagerly, slice."""
    n = x.shape[0]
    padded = jnp.pad(x, ((0, bucket_size(n) - n), (0, 0)))
    z = padded / jnp.asarray(temperature, jnp.float32)
    return jax.nn.softmax(z, axis=-1)[:n]
