"""Jits a new lambda on every call, so every call compiles; must fail test_new_lengths_compile_nothing."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def masked_row_sum_kernel(lengths_ref, x_ref, o_ref):
    """Right: sums rows t < lengths[b] of this step's row block."""
    b = pl.program_id(0)
    x = x_ref[...]
    rows = lax.broadcasted_iota(jnp.int32, x.shape, 0)
    o_ref[...] = jnp.sum(jnp.where(rows < lengths_ref[b], x, 0.0), axis=0, keepdims=True)


def _call(x, lengths):
    """One grid step per batch row; each writes its own (1, 128) output row."""
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
    )(lengths, x).reshape(batch, lanes)


def masked_row_sum(x, lengths):
    """Wrong: a new lambda, jitted anew, on every call: nothing compiled before can be reused."""
    return jax.jit(lambda a, n: _call(a, n))(x, lengths)
