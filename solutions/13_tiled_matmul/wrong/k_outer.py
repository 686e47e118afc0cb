"""Puts the K axis first in the grid, so every output tile is revisited once per K block; must fail test_reduction_runs_over_last_grid_axis."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def matmul_kernel(x_ref, y_ref, o_ref, acc_ref):
    """Sums over grid axis 0, which is K here."""
    @pl.when(pl.program_id(0) == 0)
    def _():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

    @pl.when(pl.program_id(0) == pl.num_programs(0) - 1)
    def _():
        o_ref[...] = acc_ref[...].astype(o_ref.dtype)


@jax.jit
def matmul(x, y):
    """Grid (K // bk, M // bm, N // bn): K outermost."""
    m, k = x.shape
    n = y.shape[1]
    bm, bn, bk = 128, 128, 128
    return pl.pallas_call(
        matmul_kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(k // bk, m // bm, n // bn),
        in_specs=[pl.BlockSpec((bm, bk), lambda kk, i, j: (i, kk)),
                  pl.BlockSpec((bk, bn), lambda kk, i, j: (kk, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda kk, i, j: (i, j)),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
    )(x, y)
