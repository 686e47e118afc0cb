"""A `lax.fori_loop` with constant bounds, `dynamic_update_slice` into a varying buffer, `jnp.einsum`, and
`jax.shard_map` called with keywords as a wrapper."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import PartitionSpec as P


def _stage_program(axis, stages, micro):
    """The per-device body for this mesh axis, stage count and microbatch count."""

    def body(x, w):
        me = lax.axis_index(axis)
        layer = w[0]

        def step(t, carry):
            incoming, out = carry
            mine = lax.dynamic_index_in_dim(x, jnp.minimum(t, micro - 1), axis=0, keepdims=False)
            act = jnp.tanh(jnp.einsum("bd,de->be", jnp.where(me == 0, mine, incoming), layer))
            slot = jnp.clip(t - (stages - 1), 0, micro - 1)
            keep = (me == stages - 1) & (t >= stages - 1)
            old = lax.dynamic_index_in_dim(out, slot, axis=0, keepdims=False)
            out = lax.dynamic_update_index_in_dim(out, jnp.where(keep, act, old), slot, axis=0)
            return lax.ppermute(act, axis_name=axis, perm=[(s, s + 1) for s in range(stages - 1)]), out

        init = (lax.pcast(jnp.zeros(x.shape[1:], x.dtype), (axis,), to="varying"),
                lax.pcast(jnp.zeros_like(x), (axis,), to="varying"))
        _, out = lax.fori_loop(0, micro + stages - 1, step, init)
        return lax.psum(out, axis_name=axis)

    return body


def pipeline(x, weights, mesh):
    """`out[m]` is microbatch m through every layer, in order; replicated."""
    axis = mesh.axis_names[0]
    body = _stage_program(axis, mesh.shape[axis], x.shape[0])
    return jax.shard_map(body, mesh=mesh, in_specs=(P(), P(axis)), out_specs=P())(x, weights)
