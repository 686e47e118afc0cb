"""Copies x in two column halves on two semaphores, then waits on the first copy twice; must fail test_dmas_waited."""

import jax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def scale_shift_kernel(x_hbm_ref, o_ref, *scratch):
    """Wrong: `sems.at[1]` is never waited and `sems.at[0]` is waited for a copy it never gets."""
    buf, sems = scratch
    half = x_hbm_ref.shape[1] // 2
    left = pltpu.make_async_copy(x_hbm_ref.at[:, :half], buf.at[:, :half], sems.at[0])
    right = pltpu.make_async_copy(x_hbm_ref.at[:, half:], buf.at[:, half:], sems.at[1])
    left.start()
    right.start()
    left.wait()
    left.wait()
    o_ref[...] = buf[...] * 2 + 1


def scale_shift(x):
    """A VMEM buffer of x's shape and two DMA semaphores as scratch."""
    return pl.pallas_call(
        scale_shift_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
        scratch_shapes=[pltpu.VMEM(x.shape, x.dtype), pltpu.SemaphoreType.DMA((2,))],
    )(x)
