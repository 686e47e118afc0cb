"""Alternative: input in HBM and output in ANY; one DMA in, one DMA out, `pallas_call` imported by name."""

import jax.numpy as jnp
from jax import ShapeDtypeStruct
from jax.experimental.pallas import BlockSpec, pallas_call, run_scoped
from jax.experimental.pallas import tpu as tpu


def scale_shift_kernel(x_hbm_ref, o_ref, *scratch):
    """HBM -> VMEM, compute in VMEM, VMEM -> HBM; both copies are waited."""
    def body(src, dst, sem):
        tpu.async_copy(x_hbm_ref, src, sem).wait()
        dst[...] = jnp.add(jnp.multiply(src[...], 2), 1).astype(dst.dtype)
        tpu.sync_copy(dst, o_ref)

    run_scoped(body, tpu.VMEM(x_hbm_ref.shape, x_hbm_ref.dtype),
               tpu.VMEM(o_ref.shape, o_ref.dtype), tpu.SemaphoreType.DMA)


def scale_shift(x):
    """Both operands in HBM; the kernel moves the data itself."""
    return pallas_call(
        scale_shift_kernel,
        out_shape=ShapeDtypeStruct(x.shape, x.dtype),
        in_specs=[BlockSpec(memory_space=tpu.HBM)],
        out_specs=BlockSpec(memory_space=tpu.HBM),
    )(x)
