"""Alternative: pallas_calls cached per shape in a dict, lambda kernels, and row_sum as an inlined jit."""

import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

_CALLS = {}


def add_kernel(x_ref, y_ref, o_ref):
    """One load of each input and one store, through jax.ref."""
    jax.ref.set(o_ref, ..., lax.add(jax.ref.get(x_ref, ...), jax.ref.get(y_ref, ...)))


def square_plus_kernel(x_ref, o_ref):
    """`x ** 2 + x` from one load."""
    v = x_ref[...]
    o_ref[...] = v**2 + v


def _call(name, kernel, x):
    """The pallas_call of `kernel` for x's shape and dtype, built once and kept."""
    key = (name, x.shape, x.dtype)
    if key not in _CALLS:
        _CALLS[key] = pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))
    return _CALLS[key]


def add(x, y):
    """`add_kernel` run through a lambda that forwards its refs."""
    return _call("add", lambda a, b, o: add_kernel(a, b, o), x)(x, y)


def square_plus(x):
    """`square_plus_kernel`, by keyword."""
    return _call("square_plus", square_plus_kernel, x)(x)


@functools.partial(jax.jit, inline=True)
def row_sum(x):
    """A while_loop adds each row into the ref with jax.ref.addupdate."""
    acc = jax.new_ref(jnp.zeros_like(x[0]))

    def body(i):
        jax.ref.addupdate(acc, ..., x[i])
        return i + 1

    lax.while_loop(lambda i: i < x.shape[0], body, 0)
    return jax.freeze(acc)
