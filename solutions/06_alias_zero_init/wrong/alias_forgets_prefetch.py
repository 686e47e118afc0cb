"""Counts the alias index without the scalar-prefetch table, so `{1: 0}` aliases `x` instead of the zeros; must fail test_values."""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

BLOCK = (8, 128)


def block_scale_kernel(blocks_ref, x_ref, zeros_ref, o_ref, *, scale):
    """Scale the block this step was given."""
    o_ref[...] = x_ref[...] * scale


@functools.partial(jax.jit, static_argnames=("blocks", "scale"))
def block_sparse_scale(x, blocks, scale):
    """`scale * x` on the listed blocks, with the alias pointing one operand too early."""
    spec = pl.BlockSpec(BLOCK, lambda i, b: (b[i, 0], b[i, 1]))
    return pl.pallas_call(
        functools.partial(block_scale_kernel, scale=scale),
        grid_spec=pltpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=1, grid=(len(blocks),),
            in_specs=[spec, pl.BlockSpec(memory_space=pl.ANY)], out_specs=spec),
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        input_output_aliases={1: 0},  # "the zeros are my second input"
    )(jnp.asarray(blocks, jnp.int32), x, jnp.zeros_like(x))
