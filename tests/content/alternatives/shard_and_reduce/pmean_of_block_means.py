"""A correct `shard_and_reduce` that averages block means with `pmean` and places with `reshard`."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import AxisType, NamedSharding, PartitionSpec


def make_mesh():
    """Every device, in a 2x4 grid with Explicit axes."""
    return jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Explicit,) * 2, devices=jax.devices())


def place(x, mesh):
    """Reshard onto the mesh, rows over x and columns over y."""
    return jax.sharding.reshard(x, NamedSharding(mesh, PartitionSpec("x", "y")))


def global_mean(x, mesh):
    """Every block has the same size, so the mean of the block means is the mean."""
    spec = PartitionSpec("x", "y")
    return jax.shard_map(lambda b: lax.pmean(jnp.mean(b), ("x", "y")), mesh=mesh, in_specs=spec,
                         out_specs=PartitionSpec())(x)
