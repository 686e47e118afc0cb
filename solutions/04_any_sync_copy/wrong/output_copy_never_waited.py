"""Output in ANY: the copy back to HBM is started and never waited; must fail test_dmas_waited."""

import jax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def scale_shift_kernel(x_hbm_ref, o_ref, *scratch):
    """Wrong: the kernel ends before the outgoing DMA is known to have landed."""
    def body(buf, sem):
        pltpu.sync_copy(x_hbm_ref, buf)
        buf[...] = buf[...] * 2 + 1
        pltpu.make_async_copy(buf, o_ref, sem).start()

    pl.run_scoped(body, pltpu.VMEM(x_hbm_ref.shape, x_hbm_ref.dtype), pltpu.SemaphoreType.DMA)


@jax.jit
def scale_shift(x: jax.Array) -> jax.Array:
    """Input and output both stay in HBM."""
    any_spec = pl.BlockSpec(memory_space=pl.ANY)
    return pl.pallas_call(
        scale_shift_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        in_specs=[any_spec],
        out_specs=any_spec,
    )(x)
