"""Writes tanh(x) row by row in one fori_loop, then adds x back in a second loop, reading rows already overwritten; must fail test_residual_tanh_kernel_under_aliasing."""

import functools
import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl


def swap_halves_kernel(x_ref, o_ref):
    """Both halves are read before either is written."""
    n = x_ref.shape[1] // 2
    left, right = x_ref[:, :n], x_ref[:, n:]
    o_ref[:, :n] = right
    o_ref[:, n:] = left


def residual_tanh_kernel(x_ref, o_ref):
    """tanh first, the residual after: under aliasing the second loop reads tanh(x), not x."""
    rows = x_ref.shape[0]

    def write(i, c):
        o_ref[pl.ds(i, 1), :] = jnp.tanh(x_ref[pl.ds(i, 1), :])
        return c

    def add(i, c):
        o_ref[pl.ds(i, 1), :] = o_ref[pl.ds(i, 1), :] + x_ref[pl.ds(i, 1), :]
        return c

    lax.fori_loop(0, rows, write, 0)
    lax.fori_loop(0, rows, add, 0)


@functools.partial(jax.jit, donate_argnums=(0,))
def swap_halves(x):
    """Aliased and donated."""
    return pl.pallas_call(swap_halves_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          input_output_aliases={0: 0})(x)


@functools.partial(jax.jit, donate_argnums=(0,))
def residual_tanh(x):
    """Aliased and donated."""
    return pl.pallas_call(residual_tanh_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          input_output_aliases={0: 0})(x)
