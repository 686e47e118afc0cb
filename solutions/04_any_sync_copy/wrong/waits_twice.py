"""Waits twice for one copy, so the second wait never returns; must fail test_dmas_waited."""

import jax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def scale_shift_kernel(x_hbm_ref, o_ref, *scratch):
    """Wrong: the second `.wait()` waits for bytes that no copy will ever deliver."""
    buf, sem = scratch
    copy = pltpu.make_async_copy(x_hbm_ref, buf, sem)
    copy.start()
    copy.wait()
    copy.wait()
    o_ref[...] = buf[...] * 2 + 1


def scale_shift(x):
    """A VMEM buffer and one DMA semaphore as scratch."""
    return pl.pallas_call(
        scale_shift_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
        scratch_shapes=[pltpu.VMEM(x.shape, x.dtype), pltpu.SemaphoreType.DMA],
    )(x)
