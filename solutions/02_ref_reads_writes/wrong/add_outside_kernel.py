"""Computes `add` with `jnp` outside any `pallas_call`; must fail test_add_in_pallas_call."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl


def add_kernel(x_ref, y_ref, o_ref):
    """Correct: one load of each input, one store."""
    o_ref[...] = x_ref[...] + y_ref[...]


def add(x, y):
    """Wrong: plain `jnp` addition; `add_kernel` is never called."""
    return jnp.add(x, y)


def square_plus_kernel(x_ref, o_ref):
    """Correct: one load, one store."""
    x = x_ref[...]
    o_ref[...] = x * x + x


def square_plus(x):
    """Correct wrapper."""
    return pl.pallas_call(square_plus_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)


@jax.jit
def row_sum(x):
    """Correct: a ref accumulator, frozen at the end."""
    acc = jax.new_ref(jnp.zeros(x.shape[1], x.dtype))

    def body(i, carry):
        acc[...] += x[i]
        return carry

    lax.fori_loop(0, x.shape[0], body, None)
    return jax.freeze(acc)
