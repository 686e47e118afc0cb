"""Gathers x with 7 ppermutes, then one big matmul, so nothing overlaps; must fail test_chunk_matmuls."""

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
        whole = jnp.zeros((size * rows, chunk.shape[1]), chunk.dtype)
        for step in range(size):
            whole = lax.dynamic_update_slice_in_dim(whole, chunk, ((me - step) % size) * rows, axis=0)
            if step < size - 1:
                chunk = lax.ppermute(chunk, axis, right)
        return whole @ w_cols

    return jax.shard_map(per_device, mesh=mesh, in_specs=(P(axis, None), P(None, axis)),
                         out_specs=P(None, axis))(x, w)
