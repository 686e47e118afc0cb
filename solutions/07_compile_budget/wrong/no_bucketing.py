"""Writes `bucket_size` but never pads, so the jitted softmax compiles once for every batch size; must fail test_compiles_per_batch_size."""

import jax
import jax.numpy as jnp


def bucket_size(n: int) -> int:
    """The next power of two at or above n, at least 16."""
    return max(16, 1 << (n - 1).bit_length())


@jax.jit
def _softmax(x, t):
    """softmax(x / t) over the rows of x."""
    return jax.nn.softmax(x / t, axis=-1)


def scaled_softmax(x, temperature):
    """Softmax of x / temperature, on x exactly as given."""
    return _softmax(x, jnp.float32(temperature))
