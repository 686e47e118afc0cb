"""Puts the input in VMEM with `memory_space=pltpu.VMEM`, so Pallas copies it; must fail test_input_in_hbm."""

import jax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def scale_shift_kernel(x_hbm_ref, o_ref, *scratch):
    """Wrong: `x_hbm_ref` is already a VMEM copy; the DMA below copies VMEM to VMEM."""
    (buf,) = scratch
    pltpu.sync_copy(x_hbm_ref, buf)
    o_ref[...] = buf[...] * 2 + 1


@jax.jit
def scale_shift(x):
    """The input spec names VMEM, not ANY."""
    return pl.pallas_call(
        scale_shift_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        in_specs=[pl.BlockSpec(memory_space=pltpu.VMEM)],
        scratch_shapes=[pltpu.VMEM(x.shape, x.dtype)],
    )(x)
