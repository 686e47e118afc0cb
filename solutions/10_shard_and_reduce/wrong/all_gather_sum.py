"""Gathers every block onto every device and sums there, instead of a psum of partial sums; must fail test_hlo_all_reduce_only."""

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
    """Each device gathers all the blocks and sums them."""
    def body(block):
        everything = lax.all_gather(block, ("x", "y"), tiled=True)
        return jnp.sum(everything) / x.size

    return jax.shard_map(body, mesh=mesh, in_specs=P("x", "y"), out_specs=P(), check_vma=False)(x)
