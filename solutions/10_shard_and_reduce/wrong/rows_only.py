"""Shards the rows only (P("x")), so each device of a row of the mesh holds the same full-width block; must fail test_place."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P


def make_mesh():
    """A 2x4 Explicit mesh."""
    return jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)


def place(x, mesh):
    """Rows over x."""
    return jax.device_put(x, NamedSharding(mesh, P("x")))


def global_mean(x, mesh):
    """Sum the row blocks, psum over both axes."""
    def body(block):
        return lax.psum(jnp.sum(block), ("x", "y")) / x.size

    return jax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P())(x)
