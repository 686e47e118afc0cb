"""Psums zero (M, K) buffers holding one chunk each, then one matmul; must fail test_only_collective_permutes."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import PartitionSpec as P


def ag_matmul(x, w, mesh):
    """x @ w by columns."""
    axis = mesh.axis_names[0]
    size = mesh.shape[axis]

    def per_device(chunk, w_cols):
        me = lax.axis_index(axis)
        rows = chunk.shape[0]
        buf = jnp.zeros((size * rows, chunk.shape[1]), chunk.dtype)
        buf = lax.dynamic_update_slice_in_dim(buf, chunk, me * rows, axis=0)
        return lax.psum(buf, axis) @ w_cols

    return jax.shard_map(per_device, mesh=mesh, in_specs=(P(axis, None), P(None, axis)),
                         out_specs=P(None, axis))(x, w)
