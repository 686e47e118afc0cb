"""Reshards x to P() before reducing, so every device first receives the whole array; must fail test_hlo_all_reduce_only."""

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
    """Replicate x, then take the mean of the whole array on every device."""
    full = jax.sharding.reshard(x, NamedSharding(mesh, P()))
    return jax.shard_map(jnp.mean, mesh=mesh, in_specs=P(), out_specs=P())(full)
