"""Indexes the ANY input directly instead of copying it into VMEM; must fail test_no_direct_access."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def scale_shift_kernel(x_hbm_ref, o_ref, *scratch):
    """Wrong: `x_hbm_ref[...]` on an HBM ref is not a read on a TPU."""
    o_ref[...] = x_hbm_ref[...] * 2 + 1


def scale_shift(x: jax.Array) -> jax.Array:
    """`2 * x + 1` computed by `scale_shift_kernel`, with `x` left in HBM (`pl.ANY`)."""
    return pl.pallas_call(
        scale_shift_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
    )(x)
