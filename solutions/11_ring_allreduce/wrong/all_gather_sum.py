"""Gathers every row on every device, then sums: an all-gather, not a ring; must fail test_only_collective_permutes."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import PartitionSpec as P


def ring_allreduce(x, mesh):
    """Sum the rows of x on every device."""
    axis = mesh.axis_names[0]
    size = mesh.shape[axis]
    right = [(i, (i + 1) % size) for i in range(size)]

    def per_device(row):
        every_row = lax.all_gather(row, axis, tiled=True)
        return jnp.sum(every_row, axis=0, keepdims=True)

    return jax.shard_map(per_device, mesh=mesh, in_specs=P(axis), out_specs=P(axis))(x)
