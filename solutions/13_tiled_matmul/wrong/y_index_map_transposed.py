"""Gives y's index map the block coordinates the wrong way round, (j, k) for (k, j): with square blocks it runs, but each step multiplies by the wrong block of y; must fail test_values_float32."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

T = 128


def body(a, b, out, acc):
    step = pl.program_id(2)
    part = lax.dot_general(a[...], b[...], (((1,), (0,)), ((), ())), preferred_element_type=jnp.float32)
    acc[...] = jnp.where(step == 0, part, acc[...] + part)

    @pl.when(step == pl.num_programs(2) - 1)
    def _():
        out[...] = acc[...].astype(out.dtype)


@jax.jit
def matmul(x, y):
    m, k = x.shape
    n = y.shape[1]
    return pl.pallas_call(
        body,
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(m // T, n // T, k // T),
        in_specs=[pl.BlockSpec((T, T), lambda i, j, s: (i, s)),
                  pl.BlockSpec((T, T), lambda i, j, s: (j, s))],
        out_specs=pl.BlockSpec((T, T), lambda i, j, s: (i, j)),
        scratch_shapes=[pltpu.VMEM((T, T), jnp.float32)],
    )(x, y)
