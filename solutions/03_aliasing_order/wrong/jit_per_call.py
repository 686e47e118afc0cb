"""Builds a new jitted wrapper on every call; must fail test_jitted_once."""

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


def swap_halves(x: jax.Array) -> jax.Array:
    """Wrong: a fresh `jax.jit` object on every call."""
    return jax.jit(_swap_halves, donate_argnums=(0,))(x)


def _swap_halves(x: jax.Array) -> jax.Array:
    """The pallas_call itself."""
    return pl.pallas_call(
        swap_halves_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        input_output_aliases={0: 0},
    )(x)


def residual_tanh_kernel(x_ref, o_ref):
    """o = tanh(x) + x from one load of `x_ref`, taken before the store."""
    x = x_ref[...]
    o_ref[...] = jnp.tanh(x) + x


def residual_tanh(x: jax.Array) -> jax.Array:
    """Wrong: jits a fresh lambda on every call."""
    return jax.jit(lambda v: _residual_tanh(v), donate_argnums=(0,))(x)


def _residual_tanh(x: jax.Array) -> jax.Array:
    """The pallas_call itself."""
    return pl.pallas_call(
        residual_tanh_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        input_output_aliases={0: 0},
    )(x)
