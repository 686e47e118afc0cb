"""Copies and computes one hard-coded (8, 128) tile, whatever the shape of x; must fail test_values."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def scale_shift_kernel(x_hbm_ref, o_ref, *scratch):
    """Wrong: right for an (8, 128) input only; the rest of the output is never written."""
    def body(x_vmem):
        pltpu.sync_copy(x_hbm_ref.at[:8, :128], x_vmem)
        o_ref[:8, :128] = x_vmem[...] * 2 + 1

    pl.run_scoped(body, pltpu.VMEM((8, 128), x_hbm_ref.dtype))


def scale_shift(x: jax.Array) -> jax.Array:
    """`2 * x + 1` computed by `scale_shift_kernel`, with `x` left in HBM (`pl.ANY`)."""
    return pl.pallas_call(
        scale_shift_kernel,
        out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
    )(x)
