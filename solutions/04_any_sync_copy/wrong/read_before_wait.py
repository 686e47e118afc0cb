"""Starts the copy and reads the buffer before waiting for it; must fail test_dmas_waited."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def scale_shift_kernel(x_hbm_ref, o_ref, *scratch):
    """Wrong: the destination of an async copy is undefined until its wait."""
    def body(x_vmem, sem):
        copy = pltpu.make_async_copy(x_hbm_ref, x_vmem, sem)
        copy.start()
        o_ref[...] = x_vmem[...] * 2 + 1
        copy.wait()

    pl.run_scoped(body, pltpu.VMEM(x_hbm_ref.shape, x_hbm_ref.dtype), pltpu.SemaphoreType.DMA)


def scale_shift(x: jax.Array) -> jax.Array:
    """`2 * x + 1` computed by `scale_shift_kernel`, with `x` left in HBM (`pl.ANY`)."""
    return pl.pallas_call(
        scale_shift_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
    )(x)
