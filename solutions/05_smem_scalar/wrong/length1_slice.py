"""Reads its length as a length-1 slice `lengths_ref[pl.ds(b, 1)]`, a vector, not a scalar; must fail test_scalar_reads."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def masked_row_sum_kernel(lengths_ref, x_ref, o_ref):
    """Wrong: a (1,)-shaped read is vector work padded to a full tile."""
    b = pl.program_id(0)
    n = lengths_ref[pl.ds(b, 1)]
    x = x_ref[...]
    rows = lax.broadcasted_iota(jnp.int32, x.shape, 0)
    o_ref[pl.ds(b, 1), :] = jnp.sum(jnp.where(rows < n, x, 0.0), axis=0, keepdims=True)


@jax.jit
def masked_row_sum(x: jax.Array, lengths: jax.Array) -> jax.Array:
    """out[b] = x[b, :lengths[b]].sum(0), with lengths by scalar prefetch."""
    batch, time, lanes = x.shape
    grid_spec = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=1,
        grid=(batch,),
        in_specs=[pl.BlockSpec((None, time, lanes), lambda b, lengths_ref: (b, 0, 0))],
        out_specs=pl.BlockSpec((batch, lanes), lambda b, lengths_ref: (0, 0)),
    )
    return pl.pallas_call(
        masked_row_sum_kernel,
        grid_spec=grid_spec,
        out_shape=jax.ShapeDtypeStruct((batch, lanes), x.dtype),
    )(lengths, x)
