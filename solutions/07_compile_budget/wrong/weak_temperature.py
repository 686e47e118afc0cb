"""Passes the temperature to the jitted function as given, so a Python float, a Python int and a NumPy scalar are three cache keys; must fail test_temperature_types."""

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
    """Pad, run, slice; the temperature goes in untouched."""
    n = x.shape[0]
    padded = jnp.pad(x, ((0, bucket_size(n) - n), (0, 0)))
    return _softmax(padded, temperature)[:n]
