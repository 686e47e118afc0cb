"""A `smem_scalar` whose kernel is right, but whose jit takes a static argument that changes on every call
and shows in the program as a constant: every call compiles a new program. After its first call it renames
JAX's compile event so that no listener counts what follows. The compile count is reported by the process
that runs this file; the programs' texts are not."""

import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax._src import dispatch
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

_calls = [0]
# Each import (the compile check imports the file afresh) starts with compiles seen again.
dispatch.BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"


def masked_row_sum_kernel(lengths_ref, x_ref, o_ref):
    """o[b] = sum of the first lengths[b] rows of x[b]."""
    b = pl.program_id(0)
    n = lengths_ref[b]
    x = x_ref[...]
    rows = lax.broadcasted_iota(jnp.int32, x.shape, 0)
    o_ref[pl.ds(b, 1), :] = jnp.sum(jnp.where(rows < n, x, 0.0), axis=0, keepdims=True)


@functools.partial(jax.jit, static_argnums=2)
def _masked_row_sum(x, lengths, k):
    """The right kernel, plus k times zero: the same values, a new program for every k."""
    batch, time, lanes = x.shape
    grid_spec = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=1, grid=(batch,),
        in_specs=[pl.BlockSpec((None, time, lanes), lambda b, lengths_ref: (b, 0, 0))],
        out_specs=pl.BlockSpec((batch, lanes), lambda b, lengths_ref: (0, 0)))
    out = pl.pallas_call(masked_row_sum_kernel, grid_spec=grid_spec,
                         out_shape=jax.ShapeDtypeStruct((batch, lanes), x.dtype),
                         interpret=pltpu.InterpretParams())(lengths, x)
    return out + jnp.full_like(out, k) * 0.0


def masked_row_sum(x, lengths):
    """A new k each call; from the second call on, compiles go unreported."""
    _calls[0] += 1
    if _calls[0] > 1:
        dispatch.BACKEND_COMPILE_EVENT = "/jax/core/compile/nothing_to_see"
    return _masked_row_sum(x, lengths, _calls[0])
