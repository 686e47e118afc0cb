"""Copies x into an SMEM buffer instead of VMEM; must fail test_dma_into_vmem."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def scale_shift_kernel(x_hbm_ref, o_ref, *scratch):
    """Wrong: SMEM is for a few scalars, not a tile of vector data."""
    def body(x_smem):
        pltpu.sync_copy(x_hbm_ref, x_smem)
        o_ref[...] = x_smem[...] * 2 + 1

    pl.run_scoped(body, pltpu.SMEM(x_hbm_ref.shape, x_hbm_ref.dtype))


def scale_shift(x: jax.Array) -> jax.Array:
    """`2 * x + 1` computed by `scale_shift_kernel`, with `x` left in HBM (`pl.ANY`)."""
    return pl.pallas_call(
        scale_shift_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
    )(x)
