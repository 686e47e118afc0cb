"""Divides the psum by the element count of one device's block, not the global count; must fail test_mean_values."""

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
    """psum of the block sums, over the block size."""
    def body(block):
        return lax.psum(jnp.sum(block), ("x", "y")) / block.size

    return jax.shard_map(body, mesh=mesh, in_specs=P("x", "y"), out_specs=P())(x)
