"""Copies x in properly but stores the result straight into an ANY output; must fail test_no_direct_access."""

import functools

import jax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

_any = pl.BlockSpec(memory_space=pl.ANY)
_call = functools.partial(pl.pallas_call, in_specs=[_any], out_specs=_any)


def scale_shift_kernel(x_hbm_ref, o_ref, *scratch):
    """Wrong: `o_ref` is in HBM too, so `o_ref[...] = ...` is a store a TPU refuses."""
    def body(buf):
        pltpu.sync_copy(x_hbm_ref, buf)
        o_ref[...] = buf[...] * 2 + 1

    pl.run_scoped(body, pltpu.VMEM(x_hbm_ref.shape, x_hbm_ref.dtype))


def scale_shift(x):
    """Both operands in ANY."""
    return _call(scale_shift_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)
