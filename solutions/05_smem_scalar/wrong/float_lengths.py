"""Casts the lengths to float32 for the scalar prefetch: no integer length in SMEM; must fail test_lengths_in_smem."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def masked_row_sum_kernel(lengths_ref, x_ref, o_ref):
    """Wrong: compares row numbers with a float length."""
    b = pl.program_id(0)
    x = x_ref[...]
    rows = lax.broadcasted_iota(jnp.int32, x.shape, 0).astype(jnp.float32)  # a TPU makes integer iotas only
    o_ref[...] = jnp.sum(jnp.where(rows < lengths_ref[b], x, 0.0), axis=0, keepdims=True)


@jax.jit
def masked_row_sum(x, lengths):
    """The table is float32: one compile, right values, but not an integer table."""
    batch, time, lanes = x.shape
    return pl.pallas_call(
        masked_row_sum_kernel,
        grid_spec=pltpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=1,
            grid=(batch,),
            in_specs=[pl.BlockSpec((None, time, lanes), lambda b, lens: (b, 0, 0))],
            out_specs=pl.BlockSpec((None, 1, lanes), lambda b, lens: (b, 0, 0)),  # a whole (1, 128) row
        ),
        out_shape=jax.ShapeDtypeStruct((batch, 1, lanes), x.dtype),
    )(lengths.astype(jnp.float32), x).reshape(batch, lanes)
