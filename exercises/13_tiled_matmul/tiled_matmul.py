"""Exercise `tiled_matmul`: a tiled matmul whose last grid axis walks K into a float32 VMEM accumulator.

`course show tiled_matmul` prints the lesson; `course check tiled_matmul` grades this file under
the strict TPU interpreter.
"""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def matmul_kernel(x_ref, y_ref, o_ref, acc_ref):
    """One K step of one output tile: add x_block @ y_block into the accumulator."""
    # TODO: zero `acc_ref` at the first K step, add this step's product (float32 result),
    # and write `o_ref` from the accumulator at the last K step.
    raise NotImplementedError("matmul_kernel")


def matmul(x: jax.Array, y: jax.Array) -> jax.Array:
    """x @ y for x (M, K) and y (K, N), both float32 or both bfloat16, in x's dtype."""
    # TODO: jit this; one pl.pallas_call with grid (M // bm, N // bn, K // bk), block specs for
    # x, y and the output, and a float32 VMEM scratch.
    raise NotImplementedError("matmul")
