"""Exercise: `tiled_matmul`. A file that runs the reference kernel under the grader's `jax.jit` and raises when it
is called as a learner calls it.

`matmul` is the reference's, but not jitted itself, and it asks whether `x` is a `jax.core.Tracer`: inside the
grader's jit it is, and the reference kernel runs, for every value and every trace the grader reads. Called with real
arrays, as anyone who imports the file calls it, it raises. The executor makes that plain call beside the grader's
jit, and a plain call that raised there said nothing, since a function "may need the jit to run at all".

Deserved: the values checks fail (`test_values_float32`, `test_values_bfloat16_accumulate_in_float32`): the
function does not compute x @ y when it is called.

Scored through `course check` when this file was added: 17 of 17, "passed".
"""


import jax
import jax.numpy as jnp
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

    @pl.when(k == 0)
    def _zero():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

    @pl.when(k == pl.num_programs(2) - 1)
    def _write():
        o_ref[...] = acc_ref[...].astype(o_ref.dtype)


def matmul(x: jax.Array, y: jax.Array) -> jax.Array:
    """x @ y, but only inside someone else's jit."""
    if not isinstance(x, jax.core.Tracer):
        raise RuntimeError("not now")
    m, k = x.shape
    n = y.shape[1]
    bm, bn, bk = (_fit(size, block) for size, block in zip((m, n, k), BLOCKS[x.dtype], strict=True))
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
