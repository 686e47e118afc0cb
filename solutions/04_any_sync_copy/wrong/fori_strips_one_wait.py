"""Starts the strip copies in a `fori_loop` and waits once, after the loop; must fail test_dmas_waited."""

import functools

import jax
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def scale_shift_kernel(x_hbm_ref, o_ref, *scratch):
    """Wrong: the loop starts one copy per strip, but the one wait after it answers one strip."""
    buf, sem = scratch

    def strip(j):
        cols = pl.ds(pl.multiple_of(j * 128, 128), 128)
        return pltpu.make_async_copy(x_hbm_ref.at[:, cols], buf.at[:, cols], sem)

    def start(j, carry):
        strip(j).start()
        return carry

    lax.fori_loop(0, x_hbm_ref.shape[1] // 128, start, None)
    strip(0).wait()
    o_ref[...] = (buf[...] * 2 + 1).astype(o_ref.dtype)


@functools.partial(jax.jit)
def scale_shift(x):
    """Scratch: a VMEM buffer of x's shape and one semaphore."""
    return pl.pallas_call(
        scale_shift_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
        scratch_shapes=[pltpu.VMEM(x.shape, x.dtype), pltpu.SemaphoreType.DMA(())],
    )(x)
