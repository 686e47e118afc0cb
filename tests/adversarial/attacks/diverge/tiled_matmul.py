"""Exercise: `tiled_matmul`. A file that shows one program when traced and runs another when called.

Traced (its arguments are `jax.core.Tracer`s, as when the grader traces it for its kernel, grid and blocks),
it runs the reference's kernel on a 3-D grid of TPU tiles whose last axis walks K; called with real arrays,
it runs the same kernel on one whole block per array (the mistake of `wrong/whole_blocks.py`), whose values
are right.

Deserved: "working set fits VMEM" fails (`test_working_set_fits_vmem`), and with it whatever the grader says
of the whole-block kernel the learner's code really runs (a grid that never walks K).

Scored through `course check` when this file was added: 16 of 16, "passed".
"""

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


def _call(x, y, bm, bn, bk):
    """The kernel over a grid of (bm, bn) output tiles walking K in blocks of bk."""
    m, k = x.shape
    n = y.shape[1]
    return pl.pallas_call(
        matmul_kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(m // bm, n // bn, k // bk),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
                  pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel", "arbitrary")),
        interpret=pltpu.InterpretParams(),
    )(x, y)


@jax.jit
def _tiled(x, y):
    """The reference's program: TPU tiles, K walked on the last grid axis."""
    return _call(x, y, _tile(x.shape[0]), _tile(y.shape[1]), _tile(x.shape[1]))


@jax.jit
def _whole(x, y):
    """One block per array: nothing tiled, K never walked."""
    return _call(x, y, x.shape[0], y.shape[1], x.shape[1])


def matmul(x, y):
    """The tiled program when traced; the whole-block one when called."""
    if isinstance(x, jax.core.Tracer):
        return _tiled(x, y)
    return _whole(x, y)
