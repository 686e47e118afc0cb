"""Computes the right bucket but pads every batch to the largest size anyway, so small batches run on 1024 rows; must fail test_rows_run."""

import math

import jax
import jax.numpy as jnp


def bucket_size(n: int) -> int:
    """The next power of two at or above n."""
    return 2 ** math.ceil(math.log2(n))


_run = jax.jit(lambda x, t: jax.nn.softmax(x / t, axis=-1))


def scaled_softmax(x, temperature):
    """Pad to 1024 rows so that a single program serves every batch."""
    n = x.shape[0]
    full = jnp.zeros((1024, x.shape[1]), x.dtype).at[:n].set(x)
    return _run(full, jnp.float32(temperature))[:n]
