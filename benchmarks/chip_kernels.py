"""The course's kernels with their blocks as parameters, and XLA's own op for the same math: what bench_chip.py times.

Each builder takes the kernel body of a reference solution (imported from `solutions/` by path, so
the body timed is the course's own) and wraps it in a `pallas_call` with the blocks asked for, so
that one run can time the same kernel at several block sizes. Nothing here chooses blocks.
"""

from __future__ import annotations

import functools
import importlib.util
import math
from pathlib import Path
from types import ModuleType

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

ROOT = Path(__file__).resolve().parents[1]


def solution(name: str) -> ModuleType:
    """The reference solution module of exercise `name` (its folder found by the name's suffix)."""
    path = next((ROOT / "solutions").glob(f"*_{name}/{name}.py"))
    spec = importlib.util.spec_from_file_location(f"reference_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def matmul(bm: int, bn: int, bk: int):
    """The course's tiled matmul kernel at blocks (bm, bn, bk), jitted."""
    kernel = solution("tiled_matmul").matmul_kernel

    @jax.jit
    def run(x: jax.Array, y: jax.Array) -> jax.Array:
        m, k = x.shape
        n = y.shape[1]
        return pl.pallas_call(
            kernel,
            out_shape=jax.ShapeDtypeStruct((m, n), x.dtype),
            grid=(m // bm, n // bn, k // bk),
            in_specs=[pl.BlockSpec((bm, bk), lambda i, j, kk: (i, kk)),
                      pl.BlockSpec((bk, bn), lambda i, j, kk: (kk, j))],
            out_specs=pl.BlockSpec((bm, bn), lambda i, j, kk: (i, j)),
            scratch_shapes=[pltpu.VMEM((bm, bn), jnp.float32)],
            compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel", "arbitrary")),
        )(x, y)

    return run


def attention(bq: int, bk: int):
    """The course's flash attention kernel at blocks (bq, bk), jitted."""
    body = solution("flash_attention").attention_kernel

    @jax.jit
    def run(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
        s_len, d = q.shape
        t_len = k.shape[0]
        return pl.pallas_call(
            functools.partial(body, scale=1.0 / math.sqrt(d)),
            out_shape=jax.ShapeDtypeStruct((s_len, d), q.dtype),
            grid=(s_len // bq, t_len // bk),
            in_specs=[pl.BlockSpec((bq, d), lambda i, j: (i, 0)),
                      pl.BlockSpec((bk, d), lambda i, j: (j, 0)),
                      pl.BlockSpec((bk, d), lambda i, j: (j, 0))],
            out_specs=pl.BlockSpec((bq, d), lambda i, j: (i, 0)),
            scratch_shapes=[pltpu.VMEM((bq, 1), jnp.float32), pltpu.VMEM((bq, 1), jnp.float32),
                            pltpu.VMEM((bq, d), jnp.float32)],
            compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "arbitrary")),
        )(q, k, v)

    return run


def copy_rows(rows: int):
    """A copy of x (n, 128) float32 in blocks of `rows` rows: its time against its grid steps gives a step's cost."""

    def kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...]

    @jax.jit
    def run(x: jax.Array) -> jax.Array:
        n = x.shape[0]
        return pl.pallas_call(
            kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(n // rows,),
            in_specs=[pl.BlockSpec((rows, 128), lambda i: (i, 0))],
            out_specs=pl.BlockSpec((rows, 128), lambda i: (i, 0)),
        )(x)

    return run


def xla_matmul(x: jax.Array, y: jax.Array) -> jax.Array:
    """XLA's own product, in x's dtype."""
    return jnp.dot(x, y, preferred_element_type=jnp.float32).astype(x.dtype)


def xla_attention(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
    """softmax(q kᵀ / √d) v as XLA does it: the whole (S, T) score matrix, in float32."""
    s = lax.dot_general(q, k, (((1,), (1,)), ((), ())), preferred_element_type=jnp.float32)
    p = jax.nn.softmax(s / math.sqrt(q.shape[1]), axis=-1)
    return jnp.dot(p.astype(v.dtype), v, preferred_element_type=jnp.float32).astype(q.dtype)


def exact_matmul(x: jax.Array, y: jax.Array) -> jax.Array:
    """The product at the highest precision the chip has, in float32: what results are compared with."""
    return jnp.dot(x.astype(jnp.float32), y.astype(jnp.float32), precision=lax.Precision.HIGHEST)


def exact_attention(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
    """Attention at the highest precision, in float32."""
    q, k, v = (a.astype(jnp.float32) for a in (q, k, v))
    s = jnp.dot(q, k.T, precision=lax.Precision.HIGHEST) / math.sqrt(q.shape[1])
    return jnp.dot(jax.nn.softmax(s, axis=-1), v, precision=lax.Precision.HIGHEST)


def _old_stream_kernel(x_hbm_ref, o_ref, bufs, sems):
    """double_buffer's reference as it was: rows of 8 streamed in by hand, the whole output one VMEM block."""
    rows = 8
    n_blocks = x_hbm_ref.shape[0] // rows

    def copy(block, slot):
        return pltpu.make_async_copy(x_hbm_ref.at[pl.ds(block * rows, rows)], bufs.at[slot], sems.at[slot])

    copy(0, 0).start()

    def step(i, carry):
        slot = i % 2

        @pl.when(i + 1 < n_blocks)
        def _prefetch():
            copy(i + 1, 1 - slot).start()

        copy(i, slot).wait()
        o_ref[pl.ds(pl.multiple_of(i * rows, rows), rows), :] = 2 * bufs[slot]
        return carry

    lax.fori_loop(0, n_blocks, step, 0)


@jax.jit
def old_stream_scale(x: jax.Array) -> jax.Array:
    """double_buffer's reference before its output streamed too."""
    return pl.pallas_call(
        _old_stream_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
        in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
        scratch_shapes=[pltpu.VMEM((2, 8, 128), x.dtype), pltpu.SemaphoreType.DMA((2,))],
    )(x)


BEFORE = {"tiled_matmul": lambda: matmul(256, 256, 256), "flash_attention": lambda: attention(128, 128),
          "double_buffer": lambda: old_stream_scale}
"""The references as they were before their blocks were chosen for the chip (issue 42's "before")."""
