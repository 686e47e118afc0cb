"""Rotates a whole (M, K) buffer of x instead of one chunk, 8 times the traffic; must fail test_ring_permutes."""

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
        # The buffer holds the device's chunk at its own rows and travels whole.
        buf = lax.dynamic_update_slice_in_dim(jnp.zeros((size * rows, chunk.shape[1]), chunk.dtype), chunk,
                                              me * rows, axis=0)
        out = jnp.zeros((size * rows, w_cols.shape[1]), chunk.dtype)
        for step in range(size):
            owner = (me - step) % size
            mine = lax.dynamic_slice_in_dim(buf, owner * rows, rows, axis=0)
            out = lax.dynamic_update_slice_in_dim(out, mine @ w_cols, owner * rows, axis=0)
            if step < size - 1:
                buf = lax.ppermute(buf, axis, right)
        return out

    return jax.shard_map(per_device, mesh=mesh, in_specs=(P(axis, None), P(None, axis)),
                         out_specs=P(None, axis))(x, w)
