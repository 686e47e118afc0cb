"""Calls jax.set_mesh inside global_mean, which cannot run under jax.jit; must fail test_traceable."""

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
    """Sets the mesh for the shard_map inside the function."""
    with jax.set_mesh(mesh):
        body = lambda block: lax.psum(jnp.sum(block), ("x", "y")) / x.size
        return jax.shard_map(body, in_specs=P("x", "y"), out_specs=P())(x)
