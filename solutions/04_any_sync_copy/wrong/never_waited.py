"""Starts the copy and never waits for it; must fail test_dmas_waited."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def scale_shift_kernel(x_hbm_ref, o_ref, x_vmem, sem):
    """Wrong: without `.wait()` nothing says the data has arrived."""
    pltpu.make_async_copy(x_hbm_ref, x_vmem, sem).start()
    o_ref[...] = x_vmem[...] * 2 + 1


def scale_shift(x: jax.Array) -> jax.Array:
    """The input in HBM, a VMEM buffer and a DMA semaphore as scratch."""
    return pl.pallas_call(
        scale_shift_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
        scratch_shapes=[pltpu.VMEM(x.shape, x.dtype), pltpu.SemaphoreType.DMA(())],
    )(x)
