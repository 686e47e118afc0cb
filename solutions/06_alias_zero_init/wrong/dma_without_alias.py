"""Moves each listed block by DMA into an output left in HBM, but never aliases zeros onto that output, so the rest of it is uninitialized; must fail test_values."""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def block_scale_kernel(blocks_ref, x_hbm, o_hbm, buf, *, scale):
    """DMA block blocks[i] in, scale it, DMA it out to the same place."""
    i = pl.program_id(0)
    rows = pl.ds(blocks_ref[i, 0] * 8, 8)
    cols = pl.ds(blocks_ref[i, 1] * 128, 128)
    pltpu.sync_copy(x_hbm.at[rows, cols], buf)
    buf[...] *= scale
    pltpu.sync_copy(buf, o_hbm.at[rows, cols])


@functools.partial(jax.jit, static_argnums=(1, 2))
def block_sparse_scale(x, blocks, scale):
    """Scale the listed blocks in place in HBM; the output is assumed to start at zero."""
    any_spec = pl.BlockSpec(memory_space=pl.ANY)
    return pl.pallas_call(
        functools.partial(block_scale_kernel, scale=scale),
        grid_spec=pltpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=1, grid=(len(blocks),), in_specs=[any_spec], out_specs=any_spec,
            scratch_shapes=[pltpu.VMEM((8, 128), jnp.float32)]),
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
    )(jnp.asarray(blocks, jnp.int32), x)
