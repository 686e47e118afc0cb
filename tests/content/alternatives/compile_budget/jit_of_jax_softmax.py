"""A correct `scaled_softmax` that jits `jax.nn.softmax` itself and divides by the temperature before the call."""

import jax
import jax.numpy as jnp

_softmax = jax.jit(jax.nn.softmax)


def bucket_size(n: int) -> int:
    """The next power of two at or above n, at least 16."""
    return max(16, 1 << (n - 1).bit_length())


def scaled_softmax(x, temperature):
    """Pad, divide by a float32 temperature, run the jitted softmax over the last axis, slice."""
    n = x.shape[0]
    padded = jnp.pad(x, ((0, bucket_size(n) - n), (0, 0)))
    return _softmax(padded / jnp.asarray(temperature, jnp.float32))[:n]
