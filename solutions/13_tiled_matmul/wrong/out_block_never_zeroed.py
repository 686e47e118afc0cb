"""For float32 sums the K steps in the output block itself, as the JAX docs do, but never zeroes it first, so the sum starts from whatever VMEM held (NaN under the strict interpreter); must fail test_values_float32."""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def f32_kernel(x_ref, y_ref, o_ref):
    """float32: o_ref is the accumulator (but nobody clears it)."""
    o_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)


def bf16_kernel(x_ref, y_ref, o_ref, acc_ref):
    """bfloat16: a float32 scratch, cleared at the first K step."""
    @pl.when(pl.program_id(2) == 0)
    def _():
        acc_ref[...] = jnp.zeros(acc_ref.shape, jnp.float32)

    acc_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

    @pl.when(pl.program_id(2) == pl.num_programs(2) - 1)
    def _():
        o_ref[...] = acc_ref[...].astype(o_ref.dtype)


def _pick(size):
    return next(b for b in (512, 256, 128) if size % b == 0)


@functools.partial(jax.jit)
def matmul(x, y):
    (m, k), n = x.shape, y.shape[1]
    bm, bn, bk = _pick(m), _pick(n), _pick(k)
    f32 = x.dtype == jnp.float32
    return pl.pallas_call(
        f32_kernel if f32 else bf16_kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
        grid=(m // bm, n // bn, k // bk),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j, s: (i, s)), pl.BlockSpec((bk, bn), lambda i, j, s: (s, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, s: (i, j)),
        scratch_shapes=[] if f32 else [pltpu.VMEM((bm, bn), jnp.float32)],
    )(x, y)
