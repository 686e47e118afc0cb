"""Sums each block with keepdims=True, so the replicated mean has shape (1, 1) instead of being a scalar; must fail test_mean_replicated."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P


def make_mesh():
    return jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)


def place(x, mesh):
    return jax.device_put(x, NamedSharding(mesh, P("x", "y")))


def global_mean(x, mesh):
    def body(block):
        partial_sum = jnp.sum(block, keepdims=True)       # shape (1, 1): one float, but not a scalar
        return lax.psum(partial_sum, ("x", "y")) / x.size

    return jax.shard_map(body, mesh=mesh, in_specs=P("x", "y"), out_specs=P())(x)
