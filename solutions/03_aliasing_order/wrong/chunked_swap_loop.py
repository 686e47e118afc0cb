"""Swaps the halves chunk by chunk in a fori_loop, writing a chunk of the left half before reading it for the right; must fail test_swap_halves_kernel_under_aliasing."""

import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

CHUNK = 32


def swap_halves_kernel(x_ref, o_ref):
    """For each chunk j: the right chunk goes left, then the left chunk (already overwritten) goes right."""
    n = x_ref.shape[1] // 2

    def body(j, carry):
        left, right = pl.ds(j * CHUNK, CHUNK), pl.ds(n + j * CHUNK, CHUNK)
        o_ref[:, left] = x_ref[:, right]
        o_ref[:, right] = x_ref[:, left]
        return carry

    lax.fori_loop(0, n // CHUNK, body, 0)


def residual_tanh_kernel(x_ref, o_ref):
    """One load, then one store."""
    x = x_ref[...]
    o_ref[...] = jnp.tanh(x) + x


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
