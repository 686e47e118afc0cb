"""Psums each block's column sums, C/4 floats per device where one partial sum is enough; must fail test_psum_both_axes."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P


def make_mesh():
    """A 2x4 Explicit mesh."""
    return jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)


def place(x, mesh):
    """Rows over x, columns over y."""
    return jax.device_put(x, NamedSharding(mesh, P("x", "y")))


def global_mean(x, mesh):
    """Column sums of every block, added across the mesh, then summed."""
    def body(block):
        per_column = lax.psum(block.sum(0), ("x", "y"))   # a (C/4,) vector crosses the network
        return per_column.sum() / x.size

    return jax.shard_map(body, mesh=mesh, in_specs=P("x", "y"), out_specs=P())(x)
