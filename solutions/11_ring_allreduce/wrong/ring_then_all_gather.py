"""Reduce-scatters with the ring, then finishes with lax.all_gather instead of 7 more ppermute steps; must fail test_only_collective_permutes."""

import jax
from jax import lax
from jax.sharding import PartitionSpec as P


def ring_allreduce(x, mesh):
    """Sum the rows of x on every device."""
    axis = mesh.axis_names[0]
    size = mesh.shape[axis]
    right = [(i, (i + 1) % size) for i in range(size)]

    def per_device(row):
        chunks = row.reshape(size, -1)
        me = lax.axis_index(axis)
        moving = chunks[me]
        for step in range(size - 1):
            moving = lax.ppermute(moving, axis, right) + chunks[(me - step - 1) % size]
        # Device me holds chunk me + 1: shift the ring by one so that device j holds chunk j, then gather.
        mine = lax.ppermute(moving, axis, right)
        return lax.all_gather(mine, axis, tiled=True).reshape(row.shape)

    return jax.shard_map(per_device, mesh=mesh, in_specs=P(axis), out_specs=P(axis))(x)
