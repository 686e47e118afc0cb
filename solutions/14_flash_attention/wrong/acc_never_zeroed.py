"""Resets the running max and sum at the first KV step but never zeroes the accumulator, which starts as whatever the scratch held (NaN under the strict interpreter); must fail test_values_float32."""

import math

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def flash_kernel(q_ref, k_ref, v_ref, o_ref, m_ref, l_ref, acc_ref):
    """One (query block, key block) step of the online softmax."""
    j = pl.program_id(1)

    @pl.when(j == 0)
    def _start():
        m_ref[...] = jnp.full(m_ref.shape, -jnp.inf, jnp.float32)
        l_ref[...] = jnp.zeros(l_ref.shape, jnp.float32)

    q = q_ref[...]
    scores = jnp.einsum("qd,kd->qk", q, k_ref[...], preferred_element_type=jnp.float32) / math.sqrt(q.shape[-1])
    m_old = m_ref[...]
    m_cur = jnp.maximum(m_old, jnp.max(scores, axis=-1, keepdims=True))
    weights = jnp.exp(scores - m_cur)
    shrink = jnp.exp(m_old - m_cur)
    l_ref[...] = shrink * l_ref[...] + jnp.sum(weights, axis=-1, keepdims=True)
    acc_ref[...] = shrink * acc_ref[...] + jnp.einsum("qk,kd->qd", weights.astype(v_ref.dtype), v_ref[...],
                                                      preferred_element_type=jnp.float32)
    m_ref[...] = m_cur

    @pl.when(j == pl.num_programs(1) - 1)
    def _end():
        o_ref[...] = (acc_ref[...] / l_ref[...]).astype(o_ref.dtype)


@jax.jit
def attention(q, k, v):
    s_len, d = q.shape
    t_len = k.shape[0]
    bq, bk = (128, 256) if t_len % 256 == 0 else (128, 128)
    return pl.pallas_call(
        flash_kernel,
        out_shape=jax.ShapeDtypeStruct((s_len, d), q.dtype),
        grid=(s_len // bq, t_len // bk),
        in_specs=[pl.BlockSpec((bq, d), lambda i, j: (i, 0)),
                  pl.BlockSpec((bk, d), lambda i, j: (j, 0)),
                  pl.BlockSpec((bk, d), lambda i, j: (j, 0))],
        out_specs=pl.BlockSpec((bq, d), lambda i, j: (i, 0)),
        scratch_shapes=[pltpu.VMEM((bq, 1), jnp.float32), pltpu.VMEM((bq, 1), jnp.float32),
                        pltpu.VMEM((bq, d), jnp.float32)],
    )(q, k, v)
