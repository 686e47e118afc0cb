"""A correct `block_sparse_scale` whose table holds one linear block number per step, split by the index map."""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def block_scale_kernel(numbers_ref, x_ref, zeros_ref, o_ref, *, scale):
    """Scale this step's block."""
    x = x_ref[...]
    o_ref[...] = jnp.multiply(x, jnp.asarray(scale, x.dtype))


class BlockSparseScaler:
    """Holds one jitted kernel launch; the block list and scale are static."""

    def __init__(self):
        self._run = jax.jit(self._launch, static_argnums=(1, 2))

    @staticmethod
    def _launch(x, blocks, scale):
        per_row = x.shape[1] // 128
        numbers = jnp.asarray([r * per_row + c for r, c in blocks], dtype=jnp.int32)

        def index_map(i, numbers_ref):
            n = numbers_ref[i]
            return n // per_row, n % per_row

        spec = pl.BlockSpec((8, 128), index_map)
        return pl.pallas_call(
            functools.partial(block_scale_kernel, scale=scale),
            grid_spec=pltpu.PrefetchScalarGridSpec(
                num_scalar_prefetch=1, grid=(len(blocks),),
                in_specs=[spec, pl.BlockSpec(memory_space=pl.ANY)], out_specs=spec),
            out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
            input_output_aliases={2: 0},
        )(numbers, x, jnp.zeros(x.shape, x.dtype))

    def __call__(self, x, blocks, scale):
        return self._run(x, tuple(blocks), float(scale))


block_sparse_scale = BlockSparseScaler()
