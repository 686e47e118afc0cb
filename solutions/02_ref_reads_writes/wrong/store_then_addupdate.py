"""Stores x into o_ref, then addupdates y: the output is written twice; must fail test_add_kernel_loads_and_stores."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl


def add_kernel(x_ref, y_ref, o_ref):
    """Wrong: right values, but o_ref is stored, then read and stored again by the addupdate."""
    o_ref[...] = x_ref[...]
    o_ref.addupdate(y_ref[...])


def add(x, y):
    """Element-wise `x + y` computed by `add_kernel`."""
    return pl.pallas_call(add_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x, y)


def square_plus_kernel(x_ref, o_ref):
    """One load, one store."""
    x = x_ref[...]
    o_ref[...] = x * x + x


def square_plus(x):
    """`x * x + x` computed by `square_plus_kernel`."""
    return pl.pallas_call(square_plus_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)


@jax.jit
def row_sum(x):
    """Sum of the rows, accumulated into a ref."""
    acc = jax.new_ref(jnp.zeros(x.shape[1], x.dtype))
    lax.fori_loop(0, x.shape[0], lambda i, c: acc.addupdate(x[i]) or c, None)
    return jax.freeze(acc)
