"""A correct alternative: the jit of a static method is held by an object made at import; each step writes its
own (1, 128) output row, a whole dimension of a (B, 1, 128) output."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def masked_row_sum_kernel(lengths_ref, x_ref, o_ref):
    i = pl.program_id(0)
    length = lengths_ref[i]
    block = x_ref[0]
    t = jax.lax.broadcasted_iota(jnp.int32, block.shape, 0)
    o_ref[...] = jnp.where(t < length, block, jnp.zeros_like(block)).sum(axis=0)[None, :]


class Summer:
    def __init__(self):
        self.fn = jax.jit(self.run)

    @staticmethod
    def run(x, lengths):
        B, T, L = x.shape
        out = pl.pallas_call(
            masked_row_sum_kernel,
            grid_spec=pltpu.PrefetchScalarGridSpec(
                num_scalar_prefetch=1, grid=(B,),
                in_specs=[pl.BlockSpec((1, T, L), lambda i, s: (i, 0, 0))],
                out_specs=pl.BlockSpec((None, 1, L), lambda i, s: (i, 0, 0))),
            out_shape=jax.ShapeDtypeStruct((B, 1, L), jnp.float32),
        )(lengths, x)
        return out.reshape(B, L)


_SUMMER = Summer()


def masked_row_sum(x, lengths):
    return _SUMMER.fn(x, lengths)
