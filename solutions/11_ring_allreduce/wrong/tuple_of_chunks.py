"""Passes the whole row round the ring as a tuple of its 8 chunks, which `lax.ppermute` sends as 8 transfers per step; must fail test_chunk_per_step."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import PartitionSpec as P


def ring_allreduce(x, mesh):
    """Every row of the result is x.sum(0)."""
    axis = mesh.axis_names[0]
    size = mesh.shape[axis]
    right = [(i, (i + 1) % size) for i in range(size)]

    def per_device(row):
        chunks = tuple(row.reshape(size, -1))
        total = chunks
        moving = chunks
        for _ in range(size - 1):                        # 7 steps, each a tuple of 8 chunks
            moving = lax.ppermute(moving, axis, right)
            total = tuple(t + m for t, m in zip(total, moving))
        done = jnp.stack(total)
        for _ in range(size - 1):                        # and 7 more steps of one chunk each
            done = done.at[0].set(lax.ppermute(done[0], axis, right))
        return done.reshape(row.shape)

    return jax.shard_map(per_device, mesh=mesh, in_specs=P(axis), out_specs=P(axis))(x)
