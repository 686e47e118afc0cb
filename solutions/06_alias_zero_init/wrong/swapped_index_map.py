"""Returns `(col, row)` from the index map, so each step works on the transposed block position; must fail test_values."""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def block_scale_kernel(blocks_ref, x_ref, zeros_ref, o_ref, *, scale):
    """Scale the block this step was given."""
    o_ref[...] = x_ref[...] * scale


def _block_of_step(i, blocks_ref):
    """Block (row, col) of grid step i, written the wrong way round."""
    row, col = blocks_ref[i, 0], blocks_ref[i, 1]
    return col, row


@functools.partial(jax.jit, static_argnames=("blocks", "scale"))
def block_sparse_scale(x, blocks, scale):
    """`scale * x` on the listed blocks, 0 elsewhere, with the index map's coordinates swapped."""
    spec = pl.BlockSpec((8, 128), _block_of_step)
    return pl.pallas_call(
        functools.partial(block_scale_kernel, scale=scale),
        grid_spec=pltpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=1, grid=(len(blocks),),
            in_specs=[spec, pl.BlockSpec(memory_space=pl.ANY)], out_specs=spec),
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        input_output_aliases={2: 0},
    )(jnp.asarray(blocks, jnp.int32), x, jnp.zeros_like(x))
