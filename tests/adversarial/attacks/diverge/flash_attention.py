"""Exercise: `flash_attention` (Part 4, kernels that compute). A file that shows one program when traced and runs
another when called.

Traced (its arguments are `jax.core.Tracer`s, as when the grader traces it for its kernel, grid and blocks),
it runs the reference's online-softmax kernel over a KV grid axis; called with real arrays, it computes the
whole S x T score matrix and its softmax with `jax.numpy`, in float32, whose values are right.

Deserved: "the kernel does the work" (`test_kernel_does_the_work`) and "no score matrix"
(`test_no_score_matrix`) fail: the calls the learner's code really makes run no kernel and build the whole
score matrix, whatever their traces show.

Scored through `course check` when this file was added: 19 of 19, "passed".
"""

import functools
import math

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

BQ = 128  # query rows per block
BK = 128  # keys per KV step


def attention_kernel(q_ref, k_ref, v_ref, o_ref, m_sc, l_sc, acc_sc, *, scale):
    """One KV step for one query block: fold this block of keys into the running softmax."""
    kv = pl.program_id(1)

    @pl.when(kv == 0)
    def _init():
        m_sc[...] = jnp.full_like(m_sc, -jnp.inf)
        l_sc[...] = jnp.zeros_like(l_sc)
        acc_sc[...] = jnp.zeros_like(acc_sc)

    # Scores of this query block against this key block only: (BQ, BK), never (S, T).
    s = lax.dot_general(q_ref[...], k_ref[...], (((1,), (1,)), ((), ())),
                        preferred_element_type=jnp.float32) * scale
    m_prev = m_sc[...]
    m_new = jnp.maximum(m_prev, s.max(axis=1, keepdims=True))
    alpha = jnp.exp(m_prev - m_new)  # shrinks what was summed under the old max
    p = jnp.exp(s - m_new)
    l_sc[...] = alpha * l_sc[...] + p.sum(axis=1, keepdims=True)
    acc_sc[...] = alpha * acc_sc[...] + jnp.dot(p.astype(v_ref.dtype), v_ref[...],
                                                preferred_element_type=jnp.float32)
    m_sc[...] = m_new

    @pl.when(kv == pl.num_programs(1) - 1)
    def _finish():
        o_ref[...] = (acc_sc[...] / l_sc[...]).astype(o_ref.dtype)  # normalize once


@jax.jit
def _kernel_attention(q: jax.Array, k: jax.Array, v: jax.Array) -> jax.Array:
    """softmax(q k^T / sqrt(D)) v for q (S, D) and k, v (T, D), in q's dtype."""
    s_len, d = q.shape
    t_len = k.shape[0]
    kernel = functools.partial(attention_kernel, scale=1.0 / math.sqrt(d))
    return pl.pallas_call(
        kernel,
        out_shape=jax.ShapeDtypeStruct((s_len, d), q.dtype),
        grid=(s_len // BQ, t_len // BK),
        in_specs=[pl.BlockSpec((BQ, d), lambda i, j: (i, 0)),
                  pl.BlockSpec((BK, d), lambda i, j: (j, 0)),
                  pl.BlockSpec((BK, d), lambda i, j: (j, 0))],
        out_specs=pl.BlockSpec((BQ, d), lambda i, j: (i, 0)),
        scratch_shapes=[pltpu.VMEM((BQ, 1), jnp.float32),   # running max m
                        pltpu.VMEM((BQ, 1), jnp.float32),   # running sum l
                        pltpu.VMEM((BQ, d), jnp.float32)],  # unnormalized output acc
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "arbitrary")),
        interpret=pltpu.InterpretParams(),
    )(q, k, v)


@jax.jit
def _plain_attention(q, k, v):
    """softmax(q k^T / sqrt(D)) v with the whole score matrix, in float32, cast back to q's dtype."""
    scores = q.astype(jnp.float32) @ k.astype(jnp.float32).T / math.sqrt(q.shape[1])
    return (jax.nn.softmax(scores, axis=-1) @ v.astype(jnp.float32)).astype(q.dtype)


def attention(q, k, v):
    """The kernel when traced; the whole score matrix when called."""
    if isinstance(q, jax.core.Tracer):
        return _kernel_attention(q, k, v)
    return _plain_attention(q, k, v)
