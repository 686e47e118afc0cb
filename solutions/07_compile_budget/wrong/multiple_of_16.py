"""Rounds batches up to a multiple of 16 rows instead of the next power of two: the rows stay within bounds, but the buckets are not the rule's; must fail test_bucket_rule."""

import jax
import jax.numpy as jnp


def bucket_size(n: int) -> int:
    """n rounded up to a multiple of 16."""
    return -(-n // 16) * 16


@jax.jit
def _run(x, t):
    return jax.nn.softmax(x / t, axis=-1)


def scaled_softmax(x, temperature):
    """Pad to the bucket, run, slice."""
    n = x.shape[0]
    padded = jnp.pad(x, ((0, bucket_size(n) - n), (0, 0)))
    return _run(padded, jnp.asarray(temperature, jnp.float32))[:n]
