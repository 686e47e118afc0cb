"""A correct alternative: reads that follow writes of disjoint parts only, and `pl.ds` slices."""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def swap_halves_kernel(x_ref, o_ref):
    """Read the right half first, keep both halves as values, then write with `pl.ds`."""
    n = x_ref.shape[1] // 2
    right = x_ref[:, pl.ds(n, n)]
    left = x_ref[:, pl.ds(0, n)]
    o_ref[:, pl.ds(0, n)] = right
    o_ref[:, pl.ds(n, n)] = left


def residual_tanh_kernel(x_ref, o_ref):
    """Half by half: the second read follows a write of the other half, which is fine."""
    n = x_ref.shape[1] // 2
    a = x_ref[:, :n]
    o_ref[:, :n] = jnp.tanh(a) + a
    b = x_ref[:, n:]
    o_ref[:, n:] = jnp.tanh(b) + b


def _wrap(kernel):
    """An aliased, donating, jitted pallas_call of `kernel`, built once."""

    @functools.partial(jax.jit, donate_argnums=(0,))
    def run(x):
        return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                              input_output_aliases={0: 0})(x)

    return run


swap_halves = _wrap(swap_halves_kernel)
residual_tanh = _wrap(residual_tanh_kernel)
