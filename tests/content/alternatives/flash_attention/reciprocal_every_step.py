"""JAX's own TPU flash-attention style: acc is kept normalized at every KV step, by multiplying by 1 / l.

Like `jax.experimental.pallas.ops.tpu.flash_attention`, m and l are lane-replicated (bq, 128), the
reciprocal of the new running sum is taken once per step on l (guarded against 0), and acc is
rescaled by `alpha * l_old / l_new` and gets `p @ v / l_new`: no (bq, D) divide, and the last step
only casts acc into the output.
"""

import math

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

LANES = 128
NT = (((1,), (1,)), ((), ()))  # contract the last dims of q and k: q @ k.T


def _kernel(q_ref, k_ref, v_ref, o_ref, m_ref, l_ref, acc_ref):
    """Fold one key block into a running softmax whose acc is always normalized."""
    @pl.when(pl.program_id(1) == 0)
    def _():
        m_ref[...] = jnp.full(m_ref.shape, -jnp.inf, jnp.float32)
        l_ref[...] = jnp.zeros(l_ref.shape, jnp.float32)
        acc_ref[...] = jnp.zeros(acc_ref.shape, jnp.float32)

    sm_scale = 1.0 / math.sqrt(q_ref.shape[-1])
    s = jax.lax.dot_general(q_ref[...], k_ref[...], NT, preferred_element_type=jnp.float32) * sm_scale
    m_prev, l_prev = m_ref[...], l_ref[...]
    m_next = jnp.maximum(m_prev, jnp.max(s, axis=1, keepdims=True))
    p = jnp.exp(s - m_next[:, :1])
    l_corr = jnp.exp(m_prev - m_next) * l_prev
    l_next = jnp.sum(p, axis=1, keepdims=True) + l_corr
    m_ref[...], l_ref[...] = m_next, l_next
    l_next_inv = jnp.where(l_next == 0.0, 1.0, 1.0 / l_next)
    acc_ref[...] *= (l_corr * l_next_inv)[:, :1]
    pv = jax.lax.dot(p.astype(v_ref.dtype), v_ref[...], preferred_element_type=jnp.float32)
    acc_ref[...] += pv * l_next_inv[:, :1]

    @pl.when(pl.program_id(1) == pl.num_programs(1) - 1)
    def _():
        o_ref[...] = acc_ref[...].astype(o_ref.dtype)


def attention(q, k, v):
    """softmax(q k^T / sqrt(D)) v, with blocks of 128 queries and 128 keys."""
    s_len, d = q.shape
    block_q = block_k = 128
    return pl.pallas_call(
        _kernel,
        grid=(s_len // block_q, k.shape[0] // block_k),
        in_specs=[pl.BlockSpec((block_q, d), lambda i, j: (i, 0)),
                  pl.BlockSpec((block_k, d), lambda i, j: (j, 0)),
                  pl.BlockSpec((block_k, d), lambda i, j: (j, 0))],
        out_specs=pl.BlockSpec((block_q, d), lambda i, j: (i, 0)),
        out_shape=jax.ShapeDtypeStruct(q.shape, q.dtype),
        scratch_shapes=[pltpu.VMEM((block_q, LANES), jnp.float32),
                        pltpu.VMEM((block_q, LANES), jnp.float32),
                        pltpu.VMEM((block_q, d), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "arbitrary")),
    )(q, k, v)
