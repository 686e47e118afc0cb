"""Gives x an (8, 128) BlockSpec over a grid, so Pallas streams it and nothing is left to do by hand; must fail test_x_stays_in_any."""

import jax
from jax.experimental import pallas as pl


def stream_scale_kernel(x_ref, o_ref):
    """Right values: Pallas's own pipeline double-buffers x."""
    o_ref[...] = 2 * x_ref[...]


@jax.jit
def stream_scale(x):
    """One grid step per block."""
    return pl.pallas_call(
        stream_scale_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        grid=(x.shape[0] // 8,),
        in_specs=[pl.BlockSpec((8, 128), lambda i: (i, 0))],
        out_specs=pl.BlockSpec((8, 128), lambda i: (i, 0)),
    )(x)
