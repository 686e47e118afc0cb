"""A correct alternative: `jnp.add`, functools.partial wrappers, a Python loop with `ref.addupdate`."""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def add_kernel(x_ref, y_ref, o_ref):
    """o = x + y with `jnp.add`; reads both inputs before the single store."""
    x = x_ref[:, :]
    y = y_ref[...]
    o_ref[:, :] = jnp.add(x, y)


def _call(kernel, x, *rest):
    """One pallas_call of `kernel` with an output like `x`."""
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x, *rest)


add = functools.partial(_call, add_kernel)


def square_plus_kernel(x_ref, o_ref):
    """x * (x + 1): the same value, one load."""
    v = x_ref[...]
    o_ref[...] = v * (v + 1)


square_plus = functools.partial(_call, square_plus_kernel)


def _row_sum(x):
    """Rows added one by one with `addupdate` in an unrolled Python loop."""
    acc = jax.new_ref(jnp.zeros((x.shape[1],), jnp.float32))
    for i in range(x.shape[0]):
        acc.addupdate(x[i, :])
    return jax.freeze(acc)


row_sum = jax.jit(_row_sum)
