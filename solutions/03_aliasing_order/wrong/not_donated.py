"""Declares the aliasing but does not donate `x` at the `jit` level; must fail test_x_consumed."""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def swap_halves_kernel(x_ref, o_ref):
    """o = [x_right, x_left]; both halves are read before either is written."""
    n = x_ref.shape[1] // 2
    left = x_ref[:, :n]
    right = x_ref[:, n:]
    o_ref[:, :n] = right
    o_ref[:, n:] = left


@jax.jit
def swap_halves(x: jax.Array) -> jax.Array:
    """Swap the column halves of `x` in place: the output reuses `x`'s buffer, which is donated."""
    return pl.pallas_call(
        swap_halves_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        input_output_aliases={0: 0},
    )(x)


def residual_tanh_kernel(x_ref, o_ref):
    """o = tanh(x) + x from one load of `x_ref`, taken before the store."""
    x = x_ref[...]
    o_ref[...] = jnp.tanh(x) + x


@jax.jit
def residual_tanh(x: jax.Array) -> jax.Array:
    """`tanh(x) + x` written over `x`'s donated buffer."""
    return pl.pallas_call(
        residual_tanh_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        input_output_aliases={0: 0},
    )(x)
