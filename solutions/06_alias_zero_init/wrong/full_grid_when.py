"""Runs a grid over every block and uses `pl.when` to scale the listed ones and zero the rest, so the grid is as long as the whole array; must fail test_grid_steps."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def block_scale_kernel(flags_ref, x_ref, o_ref, *, scale):
    """Scale this block if the flag table lists it, else write zeros."""
    listed = flags_ref[pl.program_id(0), pl.program_id(1)] == 1

    @pl.when(listed)
    def _():
        o_ref[...] = x_ref[...] * scale

    @pl.when(jnp.logical_not(listed))
    def _():
        o_ref[...] = jnp.zeros_like(o_ref)


@functools.partial(jax.jit, static_argnames=("blocks", "scale"))
def block_sparse_scale(x, blocks, scale):
    """`scale * x` on the listed blocks and 0 elsewhere, visiting every block of `x`."""
    rows, cols = x.shape[0] // 8, x.shape[1] // 128
    flags = np.zeros((rows, cols), np.int32)
    for bi, bj in blocks:
        flags[bi, bj] = 1
    spec = pl.BlockSpec((8, 128), lambda i, j, f: (i, j))
    return pl.pallas_call(
        functools.partial(block_scale_kernel, scale=scale),
        grid_spec=pltpu.PrefetchScalarGridSpec(num_scalar_prefetch=1, grid=(rows, cols),
                                               in_specs=[spec], out_specs=spec),
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
    )(jnp.asarray(flags), x)
