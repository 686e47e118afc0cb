"""Stores x * x, then adds x with `o_ref[...] += x`: two stores to o_ref; must fail test_square_plus_one_load."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl


def add_kernel(x_ref, y_ref, o_ref):
    """x + y."""
    o_ref[...] = x_ref[...] + y_ref[...]


def add(x, y):
    """Element-wise `x + y` computed by `add_kernel`."""
    return pl.pallas_call(add_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x, y)


def square_plus_kernel(x_ref, o_ref):
    """Wrong: one load of x, but o_ref is stored, loaded back and stored again."""
    x = x_ref[...]
    o_ref[...] = x * x
    o_ref[...] += x


def square_plus(x):
    """`x * x + x` computed by `square_plus_kernel`."""
    return pl.pallas_call(square_plus_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)


@jax.jit
def row_sum(x):
    """Sum of the rows, accumulated into a ref."""
    acc = jax.new_ref(jnp.zeros(x.shape[1], x.dtype))
    lax.fori_loop(0, x.shape[0], lambda i, c: acc.addupdate(x[i]) or c, None)
    return jax.freeze(acc)
