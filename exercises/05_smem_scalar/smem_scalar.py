"""Exercise `smem_scalar`: sequence lengths by scalar prefetch, read from SMEM one scalar at a time.

`course show smem_scalar` prints the lesson; `course check smem_scalar` grades this file under the
strict TPU interpreter.
"""

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def masked_row_sum_kernel(lengths_ref, x_ref, o_ref):
    """Sum the first lengths[b] rows of x[b] into row b of the output."""
    # TODO: read this step's length as one scalar (`lengths_ref[b]`), mask the rows past it,
    # and write the sum.
    raise NotImplementedError("masked_row_sum_kernel")


def masked_row_sum(x: jax.Array, lengths: jax.Array) -> jax.Array:
    """out[b] = x[b, :lengths[b]].sum(0) for x float32 (B, T, 128) and lengths int32 (B,)."""
    # TODO: jit this once at module scope; pass `lengths` by scalar prefetch
    # (pltpu.PrefetchScalarGridSpec(num_scalar_prefetch=1, ...)).
    raise NotImplementedError("masked_row_sum")
