"""Starts the running sum from row 0, so a length of 0 still sums one row; must fail test_values."""

import jax
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def masked_row_sum_kernel(lengths_ref, x_ref, o_ref):
    """Wrong: the carry starts as x[b, 0] and the loop adds rows 1 .. n - 1; n = 0 gives x[b, 0]."""
    n = lengths_ref[pl.program_id(0)]
    first = x_ref[pl.ds(0, 1), :]
    o_ref[...] = lax.fori_loop(1, n, lambda t, acc: acc + x_ref[pl.ds(t, 1), :], first)


@jax.jit
def masked_row_sum(x, lengths):
    """One step per batch row, a (1, 128) output row each."""
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
