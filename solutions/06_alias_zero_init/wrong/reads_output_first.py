"""Adds into `o_ref` as if the aliased zeros were already in it; the block is never copied in; must fail test_values."""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def block_scale_kernel(blocks_ref, x_ref, zeros_ref, o_ref, *, scale):
    """Wrong: an output block is written back, never read in, so `o_ref[...]` here is fresh memory."""
    o_ref[...] = o_ref[...] + x_ref[...] * scale


def _listed(i, blocks_ref):
    """Step i works on block blocks[i]."""
    return blocks_ref[i, 0], blocks_ref[i, 1]


@functools.partial(jax.jit, static_argnames=("blocks", "scale"))
def block_sparse_scale(x, blocks, scale):
    """Index maps and alias are right: operands (table, x, zeros), zeros aliased onto the output."""
    spec = pl.BlockSpec((8, 128), _listed)
    return pl.pallas_call(
        functools.partial(block_scale_kernel, scale=scale),
        grid_spec=pltpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=1, grid=(len(blocks),),
            in_specs=[spec, pl.BlockSpec(memory_space=pl.ANY)], out_specs=spec),
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        input_output_aliases={2: 0},
    )(jnp.asarray(blocks, jnp.int32), x, jnp.zeros_like(x))
