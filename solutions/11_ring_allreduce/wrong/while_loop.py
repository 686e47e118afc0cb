"""Loops with lax.while_loop, whose trip count is unknown when the program is built, so the steps cannot be counted; must fail test_fourteen_steps."""

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
        chunks = row.reshape(size, -1)
        me = lax.axis_index(axis)

        def reduce_step(state):
            step, moving = state
            return step + 1, lax.ppermute(moving, axis, right) + chunks[(me - step - 1) % size]

        _, moving = lax.while_loop(lambda s: s[0] < size - 1, reduce_step, (0, chunks[me]))
        out = jnp.zeros_like(chunks).at[(me + 1) % size].set(moving)

        def gather_step(state):
            step, moving, out = state
            moving = lax.ppermute(moving, axis, right)
            return step + 1, moving, out.at[(me - step) % size].set(moving)

        _, _, out = lax.while_loop(lambda s: s[0] < size - 1, gather_step, (0, moving, out))
        return out.reshape(row.shape)

    return jax.shard_map(per_device, mesh=mesh, in_specs=P(axis), out_specs=P(axis))(x)
