"""Cleans the unvisited NaN blocks with `jnp.nan_to_num` after the kernel instead of aliasing zeros: a second pass, and no help on a TPU; must fail test_output_aliased."""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def block_scale_kernel(blocks_ref, x_ref, o_ref, *, scale):
    """Scale the block this step was given."""
    o_ref[...] = x_ref[...] * scale


@functools.partial(jax.jit, static_argnames=("blocks", "scale"))
def block_sparse_scale(x, blocks, scale):
    """`scale * x` on the listed blocks, then NaN replaced by 0 everywhere."""
    spec = pl.BlockSpec((8, 128), lambda i, b: (b[i, 0], b[i, 1]))
    out = pl.pallas_call(
        functools.partial(block_scale_kernel, scale=scale),
        grid_spec=pltpu.PrefetchScalarGridSpec(num_scalar_prefetch=1, grid=(len(blocks),),
                                               in_specs=[spec], out_specs=spec),
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
    )(jnp.asarray(blocks, jnp.int32), x)
    return jnp.nan_to_num(out, nan=0.0)
