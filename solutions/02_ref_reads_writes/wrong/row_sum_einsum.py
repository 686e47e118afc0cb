"""Lets `jnp.einsum` sum the rows, then copies the total through a ref; must fail test_row_sum_no_reduction."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def add_kernel(x_ref, y_ref, o_ref):
    """x + y."""
    o_ref[...] = x_ref[...] + y_ref[...]


def add(x, y):
    """Element-wise `x + y` computed by `add_kernel`."""
    return pl.pallas_call(add_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x, y)


def square_plus_kernel(x_ref, o_ref):
    """x * x + x from one load."""
    x = x_ref[...]
    o_ref[...] = x * x + x


def square_plus(x):
    """`x * x + x` computed by `square_plus_kernel`."""
    return pl.pallas_call(square_plus_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)


def _row_sum(x):
    """Wrong: einsum does the whole reduction; the ref adds nothing."""
    acc = jax.new_ref(jnp.zeros(x.shape[1], x.dtype))
    acc[...] += jnp.einsum("ij->j", x)
    return jax.freeze(acc)


row_sum = jax.jit(_row_sum)
