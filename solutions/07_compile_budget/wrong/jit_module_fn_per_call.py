"""Wraps a module-level function in jax.jit on every call: JAX's caches spare the compile, but each call builds a new wrapper; must fail test_compiles_per_batch_size."""

import jax
import jax.numpy as jnp


def bucket_size(n: int) -> int:
    """The smallest power of two that holds `n` rows, and at least 16."""
    return max(16, 1 << (n - 1).bit_length())


def _softmax_rows(x, temperature):
    """softmax(x / temperature) over the last axis."""
    return jax.nn.softmax(x / temperature, axis=-1)


def scaled_softmax(x: jax.Array, temperature) -> jax.Array:
    """Correct padding and temperature, but a new jitted wrapper per call."""
    n = x.shape[0]
    padded = jnp.pad(x, ((0, bucket_size(n) - n), (0, 0)))
    return jax.jit(_softmax_rows)(padded, jnp.asarray(temperature, jnp.float32))[:n]
