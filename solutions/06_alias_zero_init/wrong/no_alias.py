"""Runs the block-sparse grid without aliasing a zeros input, so blocks the grid never visits are uninitialized (NaN); must fail test_values."""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

BLOCK = (8, 128)


def block_scale_kernel(blocks_ref, x_ref, o_ref, *, scale):
    """Scale the block this step was given."""
    o_ref[...] = x_ref[...] * scale


@functools.partial(jax.jit, static_argnames=("blocks", "scale"))
def block_sparse_scale(x, blocks, scale):
    """`scale * x` on the listed blocks; the rest of the output is whatever memory held."""
    spec = pl.BlockSpec(BLOCK, lambda i, b: (b[i, 0], b[i, 1]))
    return pl.pallas_call(
        functools.partial(block_scale_kernel, scale=scale),
        grid_spec=pltpu.PrefetchScalarGridSpec(num_scalar_prefetch=1, grid=(len(blocks),),
                                               in_specs=[spec], out_specs=spec),
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
    )(jnp.asarray(blocks, jnp.int32), x)
