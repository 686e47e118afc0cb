"""m and l kept lane-replicated as (bq, 128), exp2 with log2(e) folded into the scale, m starting at -1e30."""

import functools
import math

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

LOG2E = 1.4426950408889634
LANES = 128


def flash_kernel(q_ref, k_ref, v_ref, o_ref, m_ref, l_ref, acc_ref, *, scale_log2):
    j = pl.program_id(1)

    @pl.when(j == 0)
    def _():
        m_ref[...] = jnp.full(m_ref.shape, -1e30, jnp.float32)
        l_ref[...] = jnp.zeros(l_ref.shape, jnp.float32)
        acc_ref[...] = jnp.zeros(acc_ref.shape, jnp.float32)

    s = jnp.dot(q_ref[...], k_ref[...].T, preferred_element_type=jnp.float32) * scale_log2  # log2 units
    m_old = m_ref[...]                                  # (bq, 128), every lane equal
    m_new = jnp.maximum(m_old, jnp.max(s, axis=-1, keepdims=True))
    alpha = jnp.exp2(m_old - m_new)
    p = jnp.exp2(s - m_new[:, :1])
    l_ref[...] = alpha * l_ref[...] + jnp.sum(p, axis=-1, keepdims=True)
    pv = jnp.dot(p.astype(v_ref.dtype), v_ref[...], preferred_element_type=jnp.float32)
    acc_ref[...] = alpha[:, :1] * acc_ref[...] + pv
    m_ref[...] = m_new

    @pl.when(j == pl.num_programs(1) - 1)
    def _():
        o_ref[...] = (acc_ref[...] / l_ref[...][:, :1]).astype(o_ref.dtype)


@jax.jit
def attention(q, k, v):
    s_len, d = q.shape
    t_len = k.shape[0]
    bq, bk = 128, 256 if t_len % 256 == 0 else 128
    return pl.pallas_call(
        functools.partial(flash_kernel, scale_log2=LOG2E / math.sqrt(d)),
        out_shape=jax.ShapeDtypeStruct(q.shape, q.dtype),
        grid=(s_len // bq, t_len // bk),
        in_specs=[pl.BlockSpec((bq, d), lambda i, j: (i, 0)),
                  pl.BlockSpec((bk, d), lambda i, j: (j, 0)),
                  pl.BlockSpec((bk, d), lambda i, j: (j, 0))],
        out_specs=pl.BlockSpec((bq, d), lambda i, j: (i, 0)),
        scratch_shapes=[pltpu.VMEM((bq, LANES), jnp.float32), pltpu.VMEM((bq, LANES), jnp.float32),
                        pltpu.VMEM((bq, d), jnp.float32)],
    )(q, k, v)
