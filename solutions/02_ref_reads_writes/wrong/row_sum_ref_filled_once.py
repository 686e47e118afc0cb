"""Sums the rows as values, then puts the total in a ref it never writes; must fail test_row_sum_accumulates_in_ref."""

import functools

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


@functools.partial(jax.jit, donate_argnums=())
def row_sum(x):
    """Wrong: the rows are added as values; the ref only holds the finished total."""
    total = jnp.zeros(x.shape[1], x.dtype)
    for i in range(x.shape[0]):
        total = total + x[i]
    return jax.freeze(jax.new_ref(total))
