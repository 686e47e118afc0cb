"""With row and column tables the zeros are operand 3, but the alias names operand 2 (x); must fail test_values."""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def block_scale_kernel(rows_ref, cols_ref, x_ref, zeros_ref, o_ref, *, scale):
    """Scale this step's block."""
    o_ref[...] = x_ref[...] * scale


@functools.partial(jax.jit, static_argnames=("blocks", "scale"))
def block_sparse_scale(x, blocks, scale):
    """Wrong: operands are (rows, cols, x, zeros), so alias index 2 is x itself."""
    rows = jnp.asarray([b[0] for b in blocks], jnp.int32)
    cols = jnp.asarray([b[1] for b in blocks], jnp.int32)
    spec = pl.BlockSpec((8, 128), lambda i, r, c: (r[i], c[i]))
    return pl.pallas_call(
        functools.partial(block_scale_kernel, scale=scale),
        grid_spec=pltpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=2, grid=(len(blocks),),
            in_specs=[spec, pl.BlockSpec(memory_space=pl.ANY)], out_specs=spec),
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        input_output_aliases={2: 0},
    )(rows, cols, x, jnp.zeros_like(x))
