"""Hard-codes tiles of 256, which divide none of M = 640, N = 384 and K = 384: a floor-divided grid leaves the last rows and the last columns unwritten (an L of NaN, not a box) and drops K 256 to 383; must fail test_blocks_are_tpu_tiles."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def _tile(n: int) -> int:
    """The tile for a dimension that is a multiple of 128: 256 when it divides n, else 128."""
    return 256 if n % 256 == 0 else 128


def matmul_kernel(x_ref, y_ref, o_ref, acc_ref):
    """One K step of one output tile: add x_block @ y_block into the float32 accumulator."""
    k = pl.program_id(2)

    @pl.when(k == 0)
    def _zero():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

    @pl.when(k == pl.num_programs(2) - 1)
    def _write():
        o_ref[...] = acc_ref[...].astype(o_ref.dtype)


@jax.jit
def matmul(x: jax.Array, y: jax.Array) -> jax.Array:
    """x @ y for x (M, K) and y (K, N), both float32 or both bfloat16, in x's dtype."""
    m, k = x.shape
    n = y.shape[1]
    bm, bn, bk = 256, 256, 256
    return pl.pallas_call(
        matmul_kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(m // bm, n // bn, k // bk),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
                  pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel", "arbitrary")),
    )(x, y)
