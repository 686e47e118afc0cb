"""No jit of its own (the grader's jit covers it); KV blocks of 256 folded in two Python-unrolled halves."""

import math

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def kernel(q_ref, k_ref, v_ref, o_ref, m_ref, l_ref, acc_ref):
    @pl.when(pl.program_id(1) == 0)
    def _():
        m_ref[...] = jnp.full(m_ref.shape, -jnp.inf, jnp.float32)
        l_ref[...] = jnp.zeros(l_ref.shape, jnp.float32)
        acc_ref[...] = jnp.zeros(acc_ref.shape, jnp.float32)

    q = q_ref[...]
    half = k_ref.shape[0] // 2
    for h in range(2):
        kb = k_ref[h * half:(h + 1) * half, :]
        vb = v_ref[h * half:(h + 1) * half, :]
        s = jnp.dot(q, kb.T, preferred_element_type=jnp.float32) / math.sqrt(q.shape[1])
        m_old = m_ref[...]
        m_new = jnp.maximum(m_old, s.max(axis=1, keepdims=True))
        p = jnp.exp(s - m_new)
        alpha = jnp.exp(m_old - m_new)
        l_ref[...] = alpha * l_ref[...] + p.sum(axis=1, keepdims=True)
        acc_ref[...] = alpha * acc_ref[...] + jnp.dot(p.astype(vb.dtype), vb, preferred_element_type=jnp.float32)
        m_ref[...] = m_new

    @pl.when(pl.program_id(1) == pl.num_programs(1) - 1)
    def _():
        o_ref[...] = (acc_ref[...] / l_ref[...]).astype(o_ref.dtype)


def attention(q, k, v):
    s_len, d = q.shape
    t_len = k.shape[0]
    bk = 256 if t_len % 256 == 0 else 128
    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((s_len, d), q.dtype),
        grid=(s_len // 128, t_len // bk),
        in_specs=[pl.BlockSpec((128, d), lambda i, j: (i, 0)),
                  pl.BlockSpec((bk, d), lambda i, j: (j, 0)),
                  pl.BlockSpec((bk, d), lambda i, j: (j, 0))],
        out_specs=pl.BlockSpec((128, d), lambda i, j: (i, 0)),
        scratch_shapes=[pltpu.VMEM((128, 1), jnp.float32)] * 2 + [pltpu.VMEM((128, d), jnp.float32)],
    )(q, k, v)
