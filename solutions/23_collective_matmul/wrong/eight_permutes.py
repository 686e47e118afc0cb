"""A fori_loop of 8 steps, each a product then a shift: the 8th shift runs for nothing; must fail test_ring_permutes."""

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
        out = lax.pcast(jnp.zeros((size * rows, w_cols.shape[1]), chunk.dtype), (axis,), to="varying")

        def step(i, carry):
            chunk, out = carry
            out = lax.dynamic_update_slice_in_dim(out, chunk @ w_cols, ((me - i) % size) * rows, axis=0)
            return lax.ppermute(chunk, axis, right), out

        _, out = lax.fori_loop(0, size, step, (chunk, out))
        return out

    return jax.shard_map(per_device, mesh=mesh, in_specs=(P(axis, None), P(None, axis)),
                         out_specs=P(None, axis))(x, w)
