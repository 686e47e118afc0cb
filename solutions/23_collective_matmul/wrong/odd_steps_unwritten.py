"""Writes the product only at even ring steps, so half the row blocks stay zero although the ring is whole; must fail test_values."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import PartitionSpec as P


def ag_matmul(x: jax.Array, w: jax.Array, mesh: jax.sharding.Mesh) -> jax.Array:
    """`x @ w`, sharded by columns; `x` (M, K) is sharded by rows and `w` (K, N) by columns."""
    axis = mesh.axis_names[0]
    size = mesh.shape[axis]
    to_right = [(i, (i + 1) % size) for i in range(size)]  # every device sends to its right neighbour

    def per_device(chunk: jax.Array, w_cols: jax.Array) -> jax.Array:
        """One device: its (M/8, K) rows of x, its (K, N/8) columns of w; it returns its (M, N/8) columns."""
        me = lax.axis_index(axis)
        rows = chunk.shape[0]
        out = jnp.zeros((size * rows, w_cols.shape[1]), jnp.result_type(chunk, w_cols))
        for step in range(size):
            # Start sending this chunk on before multiplying it, so the transfer and the matmul overlap.
            arriving = lax.ppermute(chunk, axis, to_right) if step < size - 1 else None
            # After `step` moves to the right, the chunk here started on device me - step.
            owner = (me - step) % size
            if step % 2 == 0:  # the odd steps' products are never written
                out = lax.dynamic_update_slice_in_dim(out, chunk @ w_cols, owner * rows, axis=0)
            chunk = arriving
        return out

    return jax.shard_map(per_device, mesh=mesh, in_specs=(P(axis, None), P(None, axis)),
                         out_specs=P(None, axis))(x, w)
