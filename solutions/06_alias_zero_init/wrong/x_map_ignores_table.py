"""The output index map follows the table but the one of x does not: wrong blocks scaled; must fail test_values."""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def block_scale_kernel(blocks_ref, x_ref, zeros_ref, o_ref, *, scale):
    """Scale this step's x block."""
    o_ref[...] = x_ref[...] * scale


@functools.partial(jax.jit, static_argnums=(1, 2))
def block_sparse_scale(x, blocks, scale):
    """Wrong: x's block is (i, 0), whatever blocks[i] is."""
    return pl.pallas_call(
        functools.partial(block_scale_kernel, scale=scale),
        grid_spec=pltpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=1, grid=(len(blocks),),
            in_specs=[pl.BlockSpec((8, 128), lambda i, t: (i % (x.shape[0] // 8), 0)),
                      pl.BlockSpec(memory_space=pl.ANY)],
            out_specs=pl.BlockSpec((8, 128), lambda i, t: (t[i, 0], t[i, 1]))),
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        input_output_aliases={2: 0},
    )(jnp.asarray(blocks, jnp.int32), x, jnp.zeros_like(x))
