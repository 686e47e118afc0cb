"""Computes the whole S x T softmax in the wrapper and only multiplies by v in the kernel; must fail test_no_score_matrix."""

import math

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def pv_kernel(p_ref, v_ref, o_ref):
    """p @ v for one block of query rows."""
    o_ref[...] = jnp.dot(p_ref[...], v_ref[...], preferred_element_type=jnp.float32).astype(o_ref.dtype)


@jax.jit
def attention(q, k, v):
    """The score matrix exists whole, in HBM: exactly what flash attention avoids."""
    p = jax.nn.softmax((q.astype(jnp.float32) @ k.astype(jnp.float32).T) / math.sqrt(q.shape[1]), axis=-1)
    s_len, d = q.shape
    t_len = k.shape[0]
    return pl.pallas_call(
        pv_kernel,
        out_shape=jax.ShapeDtypeStruct((s_len, d), q.dtype),
        grid=(s_len // 128,),
        in_specs=[pl.BlockSpec((128, t_len), lambda i: (i, 0)), pl.BlockSpec((t_len, d), lambda i: (0, 0))],
        out_specs=pl.BlockSpec((128, d), lambda i: (i, 0)),
    )(p.astype(v.dtype), v)
