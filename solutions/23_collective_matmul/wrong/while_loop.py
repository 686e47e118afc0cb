"""Loops with lax.while_loop on a traced counter, so nothing can be counted; must fail test_ring_permutes."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import PartitionSpec as P


def ag_matmul(x, w, mesh):
    """x @ w by columns."""
    axis = mesh.axis_names[0]
    size = mesh.shape[axis]
    right = [(i, (i + 1) % size) for i in range(size)]

    def per_device(chunk, w_cols):
        me = lax.axis_index(axis)
        rows = chunk.shape[0]
        out = jnp.zeros((size * rows, w_cols.shape[1]), chunk.dtype)
        out = lax.dynamic_update_slice_in_dim(out, chunk @ w_cols, me * rows, axis=0)

        def step(state):
            i, chunk, out = state
            chunk = lax.ppermute(chunk, axis, right)
            out = lax.dynamic_update_slice_in_dim(out, chunk @ w_cols, ((me - i) % size) * rows, axis=0)
            return i + 1, chunk, out

        _, _, out = lax.while_loop(lambda s: s[0] < size, step, (1, chunk, out))
        return out

    return jax.shard_map(per_device, mesh=mesh, in_specs=(P(axis, None), P(None, axis)),
                         out_specs=P(None, axis))(x, w)
