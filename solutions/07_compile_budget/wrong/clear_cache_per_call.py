"""Pads to power-of-two buckets but empties the jit's cache before every call, so every call compiles; must fail test_compiles_per_batch_size."""

import jax
import jax.numpy as jnp


def bucket_size(n: int) -> int:
    """The next power of two at or above n, at least 16."""
    return max(16, 1 << (n - 1).bit_length())


_run = jax.jit(lambda x, t: jax.nn.softmax(x / t, axis=-1))


def scaled_softmax(x, temperature):
    """Pad, run, slice; the cache emptied first."""
    n = x.shape[0]
    padded = jnp.zeros((bucket_size(n), x.shape[1]), jnp.float32).at[:n].set(x)
    _run.clear_cache()
    return _run(padded, jnp.asarray(temperature, jnp.float32))[:n]
