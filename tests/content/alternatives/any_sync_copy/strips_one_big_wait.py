"""Alternative: a copy per strip on one semaphore, then one wait whose descriptor covers the whole buffer."""

import jax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def scale_shift_kernel(x_hbm_ref, o_ref, *scratch):
    """A semaphore counts bytes: waiting with a whole-buffer descriptor waits for every strip."""
    buf, sem = scratch
    for j in range(x_hbm_ref.shape[1] // 128):
        cols = slice(j * 128, (j + 1) * 128)
        pltpu.async_copy(x_hbm_ref.at[:, cols], buf.at[:, cols], sem)
    pltpu.make_async_copy(x_hbm_ref, buf, sem).wait()
    o_ref[...] = buf[...] * 2 + 1


KERNELS = {}


def scale_shift(x):
    """A jitted call per (shape, dtype), kept in a dict."""
    key = (x.shape, str(x.dtype))
    if key not in KERNELS:
        KERNELS[key] = jax.jit(pl.pallas_call(
            scale_shift_kernel,
            out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
            in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
            scratch_shapes=[pltpu.VMEM(x.shape, x.dtype), pltpu.SemaphoreType.DMA(())],
        ))
    return KERNELS[key](x)
