"""Computes `row_sum` with `jnp.sum`, a reduction primitive; must fail test_row_sum_no_reduction."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl


def add_kernel(x_ref, y_ref, o_ref):
    """Correct: one load of each input, one store."""
    o_ref[...] = x_ref[...] + y_ref[...]


def add(x, y):
    """Correct wrapper."""
    return pl.pallas_call(add_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x, y)


def square_plus_kernel(x_ref, o_ref):
    """Correct: one load, one store."""
    x = x_ref[...]
    o_ref[...] = x * x + x


def square_plus(x):
    """Correct wrapper."""
    return pl.pallas_call(square_plus_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)


@jax.jit
def row_sum(x):
    """Wrong: `jnp.sum` does the work, no ref is involved."""
    return jnp.sum(x, axis=0)
