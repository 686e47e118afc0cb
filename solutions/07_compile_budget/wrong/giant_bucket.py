"""Uses one bucket of 1024 rows for every batch: one compile, but a batch of 1 row does the work of 1024; must fail test_rows_run."""

import jax
import jax.numpy as jnp

MAX_ROWS = 1024


def bucket_size(n: int) -> int:
    """Every batch fits the largest one."""
    return MAX_ROWS


@jax.jit
def _softmax(x, t):
    """softmax(x / t) over the rows of x."""
    return jax.nn.softmax(x / t, axis=-1)


def scaled_softmax(x, temperature):
    """Pad to 1024 rows, run, slice."""
    n = x.shape[0]
    padded = jnp.pad(x, ((0, bucket_size(n) - n), (0, 0)))
    return _softmax(padded, jnp.asarray(temperature, jnp.float32))[:n]
