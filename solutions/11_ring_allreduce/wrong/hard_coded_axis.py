"""Writes the axis name 'ring' into the code instead of reading it from the mesh, so any other mesh fails; must fail test_values."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import PartitionSpec as P


def ring_allreduce(x: jax.Array, mesh: jax.sharding.Mesh) -> jax.Array:
    """Every row of the result is `x.sum(0)`; `x` is (8, n) sharded by rows, and so is the result."""
    axis = "ring"
    size = mesh.shape[axis]
    to_right = [(i, (i + 1) % size) for i in range(size)]  # every link used, all in one direction

    def per_device(row: jax.Array) -> jax.Array:
        """Runs on each device with its (1, n) row, cut into `size` chunks of n/size floats."""
        chunks = row.reshape(size, -1)
        me = lax.axis_index(axis)
        # Reduce-scatter: at step s, pass on the running sum of chunk (me - s) and add our own part of
        # chunk (me - s - 1) to what arrives. After size - 1 steps, chunk (me + 1) is complete here.
        moving = chunks[me]
        for step in range(size - 1):
            moving = lax.ppermute(moving, axis, to_right) + chunks[(me - step - 1) % size]
        result = jnp.zeros_like(chunks).at[(me + 1) % size].set(moving)
        # All-gather: the complete chunks travel round the same ring; at step s chunk (me - s) arrives.
        for step in range(size - 1):
            moving = lax.ppermute(moving, axis, to_right)
            result = result.at[(me - step) % size].set(moving)
        return result.reshape(row.shape)

    return jax.shard_map(per_device, mesh=mesh, in_specs=P(axis), out_specs=P(axis))(x)
