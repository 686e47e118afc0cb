"""For float32 the output block is the accumulator (as in the docs' matmul); einsum; q scaled in the kernel;
the grid through PrefetchScalarGridSpec. bfloat16 keeps a float32 scratch accumulator."""

import math

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def _step(q_ref, k_ref, v_ref, m_ref, l_ref, acc):
    """Fold one KV block into (m, l, acc); acc is a float32 ref."""
    q = q_ref[...] * (1.0 / math.sqrt(q_ref.shape[-1]))
    s = jnp.einsum("qd,kd->qk", q, k_ref[...], preferred_element_type=jnp.float32)
    m_prev = m_ref[...]
    m_cur = jnp.maximum(m_prev, s.max(-1, keepdims=True))
    corr = jnp.exp(m_prev - m_cur)
    p = jnp.exp(s - m_cur)
    l_ref[...] = corr * l_ref[...] + p.sum(-1, keepdims=True)
    acc[...] = corr * acc[...] + jnp.einsum("qk,kd->qd", p.astype(v_ref.dtype), v_ref[...],
                                            preferred_element_type=jnp.float32)
    m_ref[...] = m_cur


def f32_kernel(q_ref, k_ref, v_ref, o_ref, m_ref, l_ref):
    first, last = pl.program_id(1) == 0, pl.program_id(1) == pl.num_programs(1) - 1

    @pl.when(first)
    def _():
        m_ref[...] = jnp.full(m_ref.shape, -jnp.inf, jnp.float32)
        l_ref[...] = jnp.zeros(l_ref.shape, jnp.float32)
        o_ref[...] = jnp.zeros(o_ref.shape, o_ref.dtype)

    _step(q_ref, k_ref, v_ref, m_ref, l_ref, o_ref)

    @pl.when(last)
    def _():
        o_ref[...] = o_ref[...] / l_ref[...]


def bf16_kernel(q_ref, k_ref, v_ref, o_ref, m_ref, l_ref, acc_ref):
    @pl.when(pl.program_id(1) == 0)
    def _():
        m_ref[...] = jnp.full(m_ref.shape, -jnp.inf, jnp.float32)
        l_ref[...] = jnp.zeros(l_ref.shape, jnp.float32)
        acc_ref[...] = jnp.zeros(acc_ref.shape, jnp.float32)

    _step(q_ref, k_ref, v_ref, m_ref, l_ref, acc_ref)

    @pl.when(pl.program_id(1) == pl.num_programs(1) - 1)
    def _():
        o_ref[...] = (acc_ref[...] / l_ref[...]).astype(o_ref.dtype)


@jax.jit
def attention(q, k, v):
    (s_len, d), t_len = q.shape, k.shape[0]
    f32 = q.dtype == jnp.float32
    scratch = [pltpu.VMEM((128, 1), jnp.float32), pltpu.VMEM((128, 1), jnp.float32)]
    if not f32:
        scratch.append(pltpu.VMEM((128, d), jnp.float32))
    grid_spec = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=0,
        grid=(s_len // 128, t_len // 128),
        in_specs=[pl.BlockSpec((128, d), lambda i, j: (i, 0)),
                  pl.BlockSpec((128, d), lambda i, j: (j, 0)),
                  pl.BlockSpec((128, d), lambda i, j: (j, 0))],
        out_specs=pl.BlockSpec((128, d), lambda i, j: (i, 0)),
        scratch_shapes=scratch,
    )
    return pl.pallas_call(f32_kernel if f32 else bf16_kernel, grid_spec=grid_spec,
                          out_shape=jax.ShapeDtypeStruct(q.shape, q.dtype),
                          compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "arbitrary")))(q, k, v)
