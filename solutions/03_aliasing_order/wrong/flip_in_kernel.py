"""Swaps the halves with `jnp.flip` inside the kernel, which has no TPU lowering; must fail test_lowers_for_tpu."""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def swap_halves_kernel(x_ref, o_ref):
    """Wrong on a TPU: reversing the row gives [rev(right), rev(left)], and reversing each half again gives
    [right, left], the right values, read whole before any write; but a TPU cannot compile `rev`."""
    n = x_ref.shape[1] // 2
    backwards = jnp.flip(x_ref[...], axis=1)
    o_ref[:, :n] = jnp.flip(backwards[:, :n], axis=1)
    o_ref[:, n:] = jnp.flip(backwards[:, n:], axis=1)


@functools.partial(jax.jit, donate_argnums=(0,))
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


@functools.partial(jax.jit, donate_argnums=(0,))
def residual_tanh(x: jax.Array) -> jax.Array:
    """`tanh(x) + x` written over `x`'s donated buffer."""
    return pl.pallas_call(
        residual_tanh_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        input_output_aliases={0: 0},
    )(x)
