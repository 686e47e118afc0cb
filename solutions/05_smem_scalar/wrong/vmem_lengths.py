"""Passes lengths as an ordinary blocked input, so they sit in VMEM; must fail test_lengths_in_smem."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl


def masked_row_sum_kernel(lengths_ref, x_ref, o_ref):
    """Looks right, but `lengths_ref` is a VMEM block here."""
    b = pl.program_id(0)
    n = lengths_ref[b]
    x = x_ref[...]
    rows = lax.broadcasted_iota(jnp.int32, x.shape, 0)
    o_ref[pl.ds(b, 1), :] = jnp.sum(jnp.where(rows < n, x, 0.0), axis=0, keepdims=True)


@jax.jit
def masked_row_sum(x: jax.Array, lengths: jax.Array) -> jax.Array:
    """Wrong: no scalar prefetch; the lengths are a (B,) block like any array."""
    batch, time, lanes = x.shape
    return pl.pallas_call(
        masked_row_sum_kernel,
        grid=(batch,),
        in_specs=[pl.BlockSpec((batch,), lambda b: (0,)),
                  pl.BlockSpec((None, time, lanes), lambda b: (b, 0, 0))],
        out_specs=pl.BlockSpec((batch, lanes), lambda b: (0, 0)),
        out_shape=jax.ShapeDtypeStruct((batch, lanes), x.dtype),
    )(lengths, x)
