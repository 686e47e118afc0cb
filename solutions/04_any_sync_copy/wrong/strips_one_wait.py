"""Starts one DMA per 128-column strip on one semaphore and waits only once; must fail test_dmas_waited."""

import jax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

LANES = 128


def scale_shift_kernel(x_hbm_ref, o_ref, *scratch):
    """Wrong: one `.wait()` waits for one strip's bytes, so the other strips never land."""
    buf, sem = scratch
    copies = []
    for j in range(x_hbm_ref.shape[1] // LANES):
        strip = pl.ds(j * LANES, LANES)
        copy = pltpu.make_async_copy(x_hbm_ref.at[:, strip], buf.at[:, strip], sem)
        copy.start()
        copies.append(copy)
    copies[0].wait()
    o_ref[...] = buf[...] * 2 + 1


def scale_shift(x):
    """A VMEM buffer of x's shape and one DMA semaphore as scratch."""
    return pl.pallas_call(
        scale_shift_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
        scratch_shapes=[pltpu.VMEM(x.shape, x.dtype), pltpu.SemaphoreType.DMA],
    )(x)
