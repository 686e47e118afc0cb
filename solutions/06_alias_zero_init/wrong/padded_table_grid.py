"""Pads the block table to 64 entries for a fixed grid of 64 steps; must fail test_grid_steps."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

MAX_BLOCKS = 64


def block_scale_kernel(count_ref, blocks_ref, x_ref, zeros_ref, o_ref, *, scale):
    """Steps past the real blocks repeat the last one and write it again, unchanged."""
    o_ref[...] = x_ref[...] * scale


def _listed(i, count_ref, blocks_ref):
    """Padding steps map to the last listed block."""
    j = jnp.minimum(i, count_ref[0] - 1)
    return blocks_ref[j, 0], blocks_ref[j, 1]


@functools.partial(jax.jit, static_argnames=("blocks", "scale"))
def block_sparse_scale(x, blocks, scale):
    """Wrong: the grid is as long as the padded table, 64 steps whatever `len(blocks)` is."""
    table = np.zeros((MAX_BLOCKS, 2), np.int32)
    table[: len(blocks)] = blocks
    spec = pl.BlockSpec((8, 128), _listed)
    return pl.pallas_call(
        functools.partial(block_scale_kernel, scale=scale),
        grid_spec=pltpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=2, grid=(MAX_BLOCKS,),
            in_specs=[spec, pl.BlockSpec(memory_space=pl.ANY)], out_specs=spec),
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        input_output_aliases={3: 0},
    )(jnp.asarray([len(blocks)], jnp.int32), jnp.asarray(table), x, jnp.zeros_like(x))
