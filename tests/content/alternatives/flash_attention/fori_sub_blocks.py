"""KV blocks of 512 keys, folded in by a fori_loop over 128-key sub-blocks inside the kernel; lax.cond resets."""

import math

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

SUB = 128


def kernel(q_ref, k_ref, v_ref, o_ref, m_sc, l_sc, acc_sc):
    kv = pl.program_id(1)

    def reset():
        m_sc[...] = jnp.full(m_sc.shape, -jnp.inf, jnp.float32)
        l_sc[...] = jnp.zeros(l_sc.shape, jnp.float32)
        acc_sc[...] = jnp.zeros(acc_sc.shape, jnp.float32)

    lax.cond(kv == 0, reset, lambda: None)
    q = q_ref[...]
    scale = 1.0 / math.sqrt(q.shape[-1])

    def body(c, carry):
        start = pl.multiple_of(c * SUB, SUB)
        kb, vb = k_ref[pl.ds(start, SUB), :], v_ref[pl.ds(start, SUB), :]
        s = lax.dot_general(q, kb, (((1,), (1,)), ((), ())), preferred_element_type=jnp.float32) * scale
        m_prev = m_sc[...]
        m_next = jnp.maximum(m_prev, jnp.max(s, axis=1, keepdims=True))
        a = jnp.exp(m_prev - m_next)
        p = jnp.exp(s - m_next)
        l_sc[...] = a * l_sc[...] + jnp.sum(p, axis=1, keepdims=True)
        acc_sc[...] = a * acc_sc[...] + lax.dot(p.astype(vb.dtype), vb, preferred_element_type=jnp.float32)
        m_sc[...] = m_next
        return carry

    lax.fori_loop(0, k_ref.shape[0] // SUB, body, 0)

    @pl.when(kv == pl.num_programs(1) - 1)
    def _():
        o_ref[...] = (acc_sc[...] / l_sc[...]).astype(o_ref.dtype)


@jax.jit
def attention(q, k, v):
    s_len, d = q.shape
    t_len = k.shape[0]
    bk = 512 if t_len % 512 == 0 and t_len > 512 else 128
    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((s_len, d), q.dtype),
        grid=(s_len // 128, t_len // bk),
        in_specs=[pl.BlockSpec((128, d), lambda i, j: (i, 0)),
                  pl.BlockSpec((bk, d), lambda i, j: (j, 0)),
                  pl.BlockSpec((bk, d), lambda i, j: (j, 0))],
        out_specs=pl.BlockSpec((128, d), lambda i, j: (i, 0)),
        scratch_shapes=[pltpu.VMEM((128, 1), jnp.float32), pltpu.VMEM((128, 1), jnp.float32),
                        pltpu.VMEM((128, d), jnp.float32)],
    )(q, k, v)
