"""Blocks from math.gcd with 512 (512 wherever it divides, else the largest power of two that does), a builder
cached per shape and dtype with functools.cache, the kernel a closure over the number of K steps, and the
K axis marked with the GridDimensionSemantics enums."""

import functools
import math

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


@functools.cache
def _build(m, n, k, dtype):
    bm, bn, bk = (math.gcd(d, 512) for d in (m, n, k))
    steps = k // bk

    def kernel(x_ref, y_ref, o_ref, acc_ref):
        s = pl.program_id(2)

        @pl.when(s == 0)
        def _():
            acc_ref[...] = jnp.zeros((bm, bn), jnp.float32)

        acc_ref[...] = acc_ref[...] + jnp.matmul(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)

        @pl.when(s == steps - 1)
        def _():
            o_ref[...] = acc_ref[...].astype(dtype)

    call = pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), dtype),
        grid=(m // bm, n // bn, steps),
        in_specs=[pl.BlockSpec((bm, bk), lambda i, j, s: (i, s)), pl.BlockSpec((bk, bn), lambda i, j, s: (s, j))],
        out_specs=pl.BlockSpec((bm, bn), lambda i, j, s: (i, j)),
        scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=(
            pltpu.GridDimensionSemantics.PARALLEL, pltpu.GridDimensionSemantics.PARALLEL,
            pltpu.GridDimensionSemantics.ARBITRARY)),
    )
    return jax.jit(call)


def matmul(x, y):
    return _build(x.shape[0], y.shape[1], x.shape[1], jnp.dtype(x.dtype))(x, y)
