"""Converts the temperature with `jnp.asarray(temperature)` and no dtype, so an int temperature is an int32 array, another cache key; must fail test_temperature_types."""

import jax
import jax.numpy as jnp


def bucket_size(n):
    """The next power of two at or above n, at least 16."""
    return max(16, 1 << (n - 1).bit_length())


@jax.jit
def _softmax(x, t):
    """softmax(x / t) over the rows of x."""
    return jax.nn.softmax(x / t, axis=-1)


def scaled_softmax(x, temperature):
    """Pad, run with the temperature as an array (of whatever dtype it had), slice."""
    n = x.shape[0]
    padded = jnp.pad(x, ((0, bucket_size(n) - n), (0, 0)))
    return _softmax(padded, jnp.asarray(temperature))[:n]
