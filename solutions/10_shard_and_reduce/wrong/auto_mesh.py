"""Builds the mesh with jax.sharding.Mesh, whose axes are Auto: shardings are not part of the types; must fail test_mesh."""

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P


def make_mesh():
    """The 8 devices in a 2x4 grid."""
    return Mesh(np.array(jax.devices()).reshape(2, 4), ("x", "y"))


def place(x, mesh):
    """Rows over x, columns over y."""
    return jax.device_put(x, NamedSharding(mesh, P("x", "y")))


def global_mean(x, mesh):
    """psum of the block sums over both axes, over the global count."""
    def body(block):
        return lax.psum(jnp.sum(block), ("x", "y")) / x.size

    return jax.shard_map(body, mesh=mesh, in_specs=P("x", "y"), out_specs=P())(x)
