"""Waits for its one copy, then again on the grid's first step under `pl.when`; must fail test_dmas_waited."""

import jax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def scale_shift_kernel(x_hbm_ref, o_ref, *scratch):
    """Wrong: the wait under `pl.when` asks for bytes that no copy in flight will ever bring."""
    buf, sem = scratch
    copy = pltpu.make_async_copy(x_hbm_ref, buf, sem)
    copy.start()
    copy.wait()

    @pl.when(pl.program_id(0) == 0)
    def _():
        copy.wait()

    o_ref[...] = buf[...] * 2 + 1


def scale_shift(x):
    """One grid step over the whole array, with a VMEM buffer and a DMA semaphore as scratch."""
    return pl.pallas_call(
        scale_shift_kernel,
        grid=(1,),
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
        out_specs=pl.BlockSpec(x.shape, lambda i: (0, 0)),
        scratch_shapes=[pltpu.VMEM(x.shape, x.dtype), pltpu.SemaphoreType.DMA],
    )(x)
