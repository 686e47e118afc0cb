"""Leaves out memory_space=pl.ANY, so Pallas copies x into VMEM itself; must fail test_input_in_hbm."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def scale_shift_kernel(x_hbm_ref, o_ref, *scratch):
    """Looks right, but `x_hbm_ref` is already a VMEM block here."""
    o_ref[...] = x_hbm_ref[...] * 2 + 1


def scale_shift(x: jax.Array) -> jax.Array:
    """Wrong: no `in_specs`, so the input is blocked into VMEM by Pallas."""
    return pl.pallas_call(
        scale_shift_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
    )(x)
