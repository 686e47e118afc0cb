"""A correct alternative: a `partial(jax.jit, donate_argnames="x")` made at import, used as a decorator; the swap
reads the whole block, then writes one concatenated value."""

from functools import partial

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

jit_donating_x = partial(jax.jit, donate_argnames="x")


def swap_halves_kernel(x_ref, o_ref):
    full = x_ref[...]
    half = full.shape[-1] // 2
    o_ref[...] = jnp.concatenate((full[:, half:], full[:, :half]), axis=-1)


def residual_tanh_kernel(x_ref, o_ref):
    x = x_ref[...]
    y = jnp.tanh(x)
    o_ref[...] = y + x


@jit_donating_x
def swap_halves(x):
    call = pl.pallas_call(swap_halves_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          input_output_aliases={0: 0})
    return call(x)


@jit_donating_x
def residual_tanh(x):
    call = pl.pallas_call(residual_tanh_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          input_output_aliases={0: 0})
    return call(x)
