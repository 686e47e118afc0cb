"""Reduce-scatters with lax.psum_scatter and only then passes the chunks round the ring, so half the all-reduce is XLA's; must fail test_only_collective_permutes."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import PartitionSpec as P


def ring_allreduce(x, mesh):
    """psum_scatter for the first phase, a ring of ppermutes for the second."""
    axis = mesh.axis_names[0]
    size = mesh.shape[axis]
    right = [(i, (i + 1) % size) for i in range(size)]

    def per_device(row):
        chunks = row.reshape(size, -1)
        me = lax.axis_index(axis)
        mine = lax.psum_scatter(chunks, axis, scatter_dimension=0, tiled=True)[0]   # the complete chunk `me`
        table = jnp.zeros_like(chunks).at[me].set(mine)
        moving = mine
        for step in range(size - 1):
            moving = lax.ppermute(moving, axis, right)
            table = table.at[(me - step - 1) % size].set(moving)
        return table.reshape(row.shape)

    return jax.shard_map(per_device, mesh=mesh, in_specs=P(axis), out_specs=P(axis))(x)
