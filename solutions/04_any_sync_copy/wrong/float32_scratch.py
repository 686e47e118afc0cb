"""Copies a bfloat16 input into a float32 VMEM buffer, expecting the DMA to convert; must fail test_dma_into_vmem."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def scale_shift_kernel(x_hbm_ref, o_ref, *scratch):
    """Wrong for bfloat16: a DMA copies bytes and does not convert dtypes."""
    def body(x_vmem):
        pltpu.sync_copy(x_hbm_ref, x_vmem)
        o_ref[...] = (x_vmem[...] * 2 + 1).astype(o_ref.dtype)

    pl.run_scoped(body, pltpu.VMEM(x_hbm_ref.shape, jnp.float32))


def scale_shift(x: jax.Array) -> jax.Array:
    """`2 * x + 1` computed by `scale_shift_kernel`, with `x` left in HBM (`pl.ANY`)."""
    return pl.pallas_call(
        scale_shift_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
    )(x)
