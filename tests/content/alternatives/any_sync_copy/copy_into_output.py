"""Alternative: the DMA lands straight in the output block, updated in place; a partial made at import."""

import functools

import jax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

_call = functools.partial(pl.pallas_call, in_specs=[pl.BlockSpec(memory_space=pl.ANY)])


def scale_shift_kernel(x_hbm_ref, o_ref, *scratch):
    """Copy x into the output's VMEM block, then rewrite it as 2x + 1."""
    pltpu.sync_copy(x_hbm_ref, o_ref)
    o_ref[...] = o_ref[...] * 2 + 1


def scale_shift(x):
    """No scratch at all: the output block is the VMEM buffer."""
    return _call(scale_shift_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)
