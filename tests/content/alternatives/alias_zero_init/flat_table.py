"""A correct `block_sparse_scale` with the blocks as one flat table, no jit, and `pallas_call` imported by name."""

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental.pallas import BlockSpec, pallas_call
from jax.experimental.pallas import tpu as pltpu


def block_scale_kernel(table_ref, x_ref, zero_ref, out_ref, *, scale):
    """out block = scale * x block."""
    out_ref[...] = scale * x_ref[...]


def block_sparse_scale(x, blocks, scale):
    """Scale the listed blocks; the table is [r0, c0, r1, c1, ...], read two entries per step."""
    table = np.asarray(blocks, np.int32).reshape(-1)

    def kernel(*refs):
        block_scale_kernel(*refs, scale=scale)

    def step_block(i, t):
        return t[2 * i], t[2 * i + 1]

    call = pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, jnp.float32),
        grid_spec=pltpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=1,
            grid=(len(blocks),),
            in_specs=[BlockSpec((8, 128), step_block), BlockSpec((8, 128), step_block)],
            out_specs=BlockSpec((8, 128), step_block),
        ),
        input_output_aliases={2: 0},
    )
    return call(jnp.asarray(table), x, jnp.zeros(x.shape, jnp.float32))
