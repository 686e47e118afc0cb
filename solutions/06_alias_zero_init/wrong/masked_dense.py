"""Zeroes the unlisted blocks of `x` in the wrapper and runs a dense kernel over every block, reading and writing all of memory; must fail test_grid_steps."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl


def block_scale_kernel(x_ref, o_ref, *, scale):
    """Scale one block of the already-masked input."""
    o_ref[...] = x_ref[...] * scale


@functools.partial(jax.jit, static_argnames=("blocks", "scale"))
def block_sparse_scale(x, blocks, scale):
    """Keep only the listed blocks of `x`, then scale the whole array block by block."""
    keep = np.zeros((x.shape[0] // 8, x.shape[1] // 128), np.float32)
    for bi, bj in blocks:
        keep[bi, bj] = 1.0
    masked = x * jnp.repeat(jnp.repeat(jnp.asarray(keep), 8, axis=0), 128, axis=1)
    spec = pl.BlockSpec((8, 128), lambda i, j: (i, j))
    return pl.pallas_call(
        functools.partial(block_scale_kernel, scale=scale),
        grid=(x.shape[0] // 8, x.shape[1] // 128),
        in_specs=[spec],
        out_specs=spec,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
    )(masked)
