"""Reuses the largest program compiled so far ("it is already compiled"), so after 1000 rows a 1-row batch runs on 1024; must fail test_rows_run."""

import jax
import jax.numpy as jnp

_program = jax.jit(lambda x, t: jax.nn.softmax(x / t, axis=-1))
_largest = [0]


def bucket_size(n):
    """The next power of two at or above n, at least 16."""
    return max(16, 1 << (n - 1).bit_length())


def scaled_softmax(x, temperature):
    """Pad to the bucket, or to the largest padding used so far if that is bigger."""
    n = x.shape[0]
    rows = max(bucket_size(n), _largest[0])
    _largest[0] = rows
    padded = jnp.pad(x, ((0, rows - n), (0, 0)))
    return _program(padded, jnp.asarray(temperature, jnp.float32))[:n]
