"""Zeroes the whole (B, 128) output block at every grid step, wiping earlier rows; must fail test_values."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def masked_row_sum_kernel(lengths_ref, x_ref, o_ref):
    """Wrong: the output block stays in VMEM for the whole grid, so step b clears rows 0 .. b - 1."""
    b = pl.program_id(0)
    x = x_ref[...]
    rows = lax.broadcasted_iota(jnp.int32, x.shape, 0)
    o_ref[...] = jnp.zeros(o_ref.shape, o_ref.dtype)
    o_ref[pl.ds(b, 1), :] = jnp.sum(jnp.where(rows < lengths_ref[b], x, 0.0), axis=0, keepdims=True)


@jax.jit
def masked_row_sum(x, lengths):
    """One step per batch row over one resident output block."""
    batch, time, lanes = x.shape
    return pl.pallas_call(
        masked_row_sum_kernel,
        grid_spec=pltpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=1,
            grid=(batch,),
            in_specs=[pl.BlockSpec((None, time, lanes), lambda b, lens: (b, 0, 0))],
            out_specs=pl.BlockSpec((batch, lanes), lambda b, lens: (0, 0)),
        ),
        out_shape=jax.ShapeDtypeStruct((batch, lanes), x.dtype),
    )(lengths, x)
