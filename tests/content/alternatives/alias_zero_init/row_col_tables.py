"""A correct `block_sparse_scale` with separate row and column tables and the scale in SMEM, all by scalar prefetch."""

from functools import partial

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def block_scale_kernel(rows_ref, cols_ref, scale_ref, zeros_ref, x_ref, o_ref):
    """o = scale * x for this step's block; the scale is a run-time scalar read from SMEM."""
    o_ref[...] = x_ref[...] * scale_ref[0]


def _where(i, rows_ref, cols_ref, scale_ref):
    """Step i works on block (rows[i], cols[i])."""
    return rows_ref[i], cols_ref[i]


@partial(jax.jit, static_argnames="blocks")
def _scaled(x, scale, *, blocks):
    """One compiled kernel per block list; the scale stays data."""
    rows = jnp.array([b[0] for b in blocks], jnp.int32)
    cols = jnp.array([b[1] for b in blocks], jnp.int32)
    block = pl.BlockSpec((8, 128), _where)
    return pl.pallas_call(
        block_scale_kernel,
        grid_spec=pltpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=3, grid=(len(blocks),),
            in_specs=[pl.BlockSpec(memory_space=pl.ANY), block], out_specs=block),
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        input_output_aliases={3: 0},  # rows, cols, scale, zeros: the zeros are operand 3
    )(rows, cols, jnp.reshape(scale, (1,)), jnp.zeros_like(x), x)


def block_sparse_scale(x, blocks, scale):
    """Scale the listed blocks of x by `scale`, zero elsewhere."""
    return _scaled(x, jnp.float32(scale), blocks=tuple(map(tuple, blocks)))
