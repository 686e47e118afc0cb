"""Adds each K step into the bfloat16 output block itself, rounding the sum at every step; must fail test_accumulator_is_float32_vmem."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def matmul_kernel(x_ref, y_ref, o_ref):
    """Wrong for bfloat16: o_ref is bfloat16, so every += rounds the running sum."""
    @pl.when(pl.program_id(2) == 0)
    def _():
        o_ref[...] = jnp.zeros_like(o_ref)

    o_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32).astype(o_ref.dtype)


@jax.jit
def matmul(x, y):
    """The grid and blocks of the reference, without a scratch accumulator."""
    m, k = x.shape
    n = y.shape[1]
    bm = bn = 128
    bk = 128
    return pl.pallas_call(
        matmul_kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(m // bm, n // bn, k // bk),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
                  pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
    )(x, y)
