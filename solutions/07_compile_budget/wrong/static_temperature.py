"""Makes the temperature a static argument, so every new temperature value compiles a new program; must fail test_temperature_types."""

from functools import partial

import jax
import jax.numpy as jnp


def bucket_size(n: int) -> int:
    """The next power of two at or above n, at least 16."""
    return max(16, 1 << (n - 1).bit_length())


@partial(jax.jit, static_argnames="temperature")
def _softmax(x, temperature):
    """softmax(x / temperature), with the temperature baked into the program."""
    return jax.nn.softmax(x / temperature, axis=-1)


def scaled_softmax(x, temperature):
    """Pad, run with a static temperature, slice."""
    n = x.shape[0]
    padded = jnp.pad(x, ((0, bucket_size(n) - n), (0, 0)))
    return _softmax(padded, temperature=float(temperature))[:n]
