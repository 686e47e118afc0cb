"""tiled_matmul whose kernel never zeroes its accumulator, and whose values a host callback makes right.

The grid, blocks, accumulator and compiler parameters are the reference's, so every check of the kernel's shape
reads a right kernel; but the accumulator is never zeroed, so the kernel's own output is wrong (NaN under the strict
interpreter, which leaves fresh VMEM uninitialized). A `jax.pure_callback` after it hands the kernel's output, x and
y to NumPy on the host and returns NumPy's product instead: the values checks passed, 15 of 17 (only "the kernel does
the work" saw a pass after it). The judge now reads the program the grader's jit ran, finds the callback, and the
values checks fail: what comes back from the host is not the program's own.
"""


import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

# The blocks (bm, bn, bk) to aim for, by input dtype: large output tiles, whose working set, 2 * (x block + y
# block + output block) + the float32 accumulator, stays under the 16 MiB of scoped VMEM of a TPU v5e core.
# x and y are read from HBM N / bn and M / bm times over, whatever bk, and fewer blocks take fewer grid
# steps (the lesson's table).
BLOCKS = {
    jnp.dtype(jnp.bfloat16): (1024, 1024, 512),  # 2 * (1 + 1 + 2) MiB + 4 MiB = 12 MiB
    jnp.dtype(jnp.float32): (1024, 1024, 128),  # 2 * (0.5 + 0.5 + 4) MiB + 4 MiB = 14 MiB
}


def _fit(size: int, block: int) -> int:
    """`block` halved until it divides `size` (at worst 128, which divides every size the task allows)."""
    while size % block:
        block //= 2
    return block


def matmul_kernel(x_ref, y_ref, o_ref, acc_ref):
    """One K step of one output tile: add x_block @ y_block into the float32 accumulator."""
    k = pl.program_id(2)

    acc_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

    @pl.when(k == pl.num_programs(2) - 1)
    def _write():
        o_ref[...] = acc_ref[...].astype(o_ref.dtype)


@jax.jit
def matmul(x: jax.Array, y: jax.Array) -> jax.Array:
    """x @ y for x (M, K) and y (K, N), both float32 or both bfloat16, in x's dtype."""
    m, k = x.shape
    n = y.shape[1]
    bm, bn, bk = (_fit(size, block) for size, block in zip((m, n, k), BLOCKS[x.dtype], strict=True))
    out = pl.pallas_call(
        matmul_kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(m // bm, n // bn, k // bk),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
                  pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel", "arbitrary")),
    )(x, y)
    fixed = jax.pure_callback(
        lambda o, a, b: (np.asarray(a, np.float32) @ np.asarray(b, np.float32)).astype(o.dtype),
        jax.ShapeDtypeStruct(out.shape, out.dtype), out, x, y)
    return fixed
