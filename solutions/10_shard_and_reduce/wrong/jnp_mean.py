"""Takes jnp.mean of the sharded array: right value, but XLA wrote the all-reduce, not the learner; must fail test_shard_map_blocks."""

import jax
import jax.numpy as jnp
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P


def make_mesh():
    """A 2x4 Explicit mesh."""
    return jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)


def place(x, mesh):
    """Rows over x, columns over y."""
    return jax.device_put(x, NamedSharding(mesh, P("x", "y")))


def global_mean(x, mesh):
    """The mean, left to XLA."""
    return jnp.mean(x)
