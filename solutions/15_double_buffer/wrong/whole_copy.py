"""Copies all of x into one VMEM buffer with a single DMA and computes after it: nothing streams; must fail test_streams_through_two_slots."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def stream_scale_kernel(x_hbm_ref, o_ref, buf, sem):
    """One copy, one wait, then the compute: right values, no overlap, nb blocks of VMEM."""
    copy = pltpu.make_async_copy(x_hbm_ref, buf, sem)
    copy.start()
    copy.wait()
    o_ref[...] = 2 * buf[...]


@jax.jit
def stream_scale(x):
    """The scratch holds all of x."""
    return pl.pallas_call(
        stream_scale_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
        scratch_shapes=[pltpu.VMEM(x.shape, x.dtype), pltpu.SemaphoreType.DMA(())],
    )(x)
