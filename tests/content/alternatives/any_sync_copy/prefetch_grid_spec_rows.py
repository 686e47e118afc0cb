"""Alternative: a `PrefetchScalarGridSpec` with no scalars, a grid over row blocks, and `pltpu.async_copy`."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def scale_shift_kernel(x_hbm_ref, o_ref, *scratch):
    """Step i copies its 16 rows (or 8) into VMEM and writes its output block."""
    tile, sem = scratch
    rows = tile.shape[0]
    start = pl.multiple_of(pl.program_id(0) * rows, rows)
    pltpu.async_copy(x_hbm_ref.at[pl.ds(start, rows), :], tile, sem).wait()
    o_ref[...] = (tile[...].astype(jnp.float32) * 2.0 + 1.0).astype(o_ref.dtype)


@jax.jit
def scale_shift(x):
    """bfloat16 tiles of 16 rows, float32 tiles of 8."""
    rows = 16 if x.dtype == jnp.bfloat16 and x.shape[0] % 16 == 0 else 8
    spec = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=0,
        grid=(x.shape[0] // rows,),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
        out_specs=pl.BlockSpec((rows, x.shape[1]), lambda i: (i, 0)),
        scratch_shapes=[pltpu.VMEM((rows, x.shape[1]), x.dtype), pltpu.SemaphoreType.DMA(())],
    )
    return pl.pallas_call(scale_shift_kernel, grid_spec=spec, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)
