"""Turns the lengths into a static tuple of Python ints, so each new vector compiles; must fail test_new_lengths_compile_nothing."""

import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def masked_row_sum_kernel(lengths_ref, x_ref, o_ref):
    """A correct kernel; the mistake is in the wrapper."""
    b = pl.program_id(0)
    n = lengths_ref[b]
    x = x_ref[...]
    rows = lax.broadcasted_iota(jnp.int32, x.shape, 0)
    o_ref[pl.ds(b, 1), :] = jnp.sum(jnp.where(rows < n, x, 0.0), axis=0, keepdims=True)


@functools.partial(jax.jit, static_argnums=1)
def _masked_row_sum(x, lengths):
    """Compiled once per tuple of lengths."""
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
    )(jnp.array(lengths, jnp.int32), x)


def masked_row_sum(x: jax.Array, lengths: jax.Array) -> jax.Array:
    """Wrong: `int(...)` makes each length a compile-time constant."""
    return _masked_row_sum(x, tuple(int(n) for n in lengths))
