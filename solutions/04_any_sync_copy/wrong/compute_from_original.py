"""Copies x into VMEM, then computes from the original HBM ref anyway; must fail test_no_direct_access."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def scale_shift_kernel(x_hbm_ref, o_ref, *scratch):
    """Wrong: the copy is made, then ignored."""
    def body(x_vmem):
        pltpu.sync_copy(x_hbm_ref, x_vmem)
        o_ref[...] = x_hbm_ref[...] * 2 + 1

    pl.run_scoped(body, pltpu.VMEM(x_hbm_ref.shape, x_hbm_ref.dtype))


def scale_shift(x: jax.Array) -> jax.Array:
    """`2 * x + 1` computed by `scale_shift_kernel`, with `x` left in HBM (`pl.ANY`)."""
    return pl.pallas_call(
        scale_shift_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
    )(x)
