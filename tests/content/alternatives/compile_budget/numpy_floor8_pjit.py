"""A correct `scaled_softmax` with buckets from NumPy (a floor of 8) and the older `jax.experimental.pjit` spelling."""

import jax.numpy as jnp
import numpy as np
from jax.experimental.pjit import pjit


def bucket_size(n: int) -> int:
    """2 ** ceil(log2 n), never below 8."""
    return int(max(8, 2 ** int(np.ceil(np.log2(n)))))


def _softmax(x, inv_temperature):
    """Row softmax of x scaled by 1 / temperature."""
    z = x * inv_temperature
    return jnp.exp(z - jnp.max(z, axis=1, keepdims=True)) / jnp.sum(
        jnp.exp(z - jnp.max(z, axis=1, keepdims=True)), axis=1, keepdims=True)


_program = pjit(_softmax)


def scaled_softmax(x, temperature):
    """Pad to the bucket, run the one program, keep the first n rows."""
    n = x.shape[0]
    padded = jnp.pad(x, ((0, bucket_size(n) - n), (0, 0)))
    inv = jnp.asarray(1.0 / np.float32(np.asarray(temperature)), jnp.float32)
    return _program(padded, inv)[:n]
