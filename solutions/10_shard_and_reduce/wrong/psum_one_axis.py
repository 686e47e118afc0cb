"""Sums over the x axis only and silences the replication check, so each column of devices keeps its own partial mean; must fail test_psum_both_axes."""

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
    """psum over x, as if that were every device."""
    def body(block):
        return lax.psum(jnp.sum(block), "x") / x.size

    return jax.shard_map(body, mesh=mesh, in_specs=P("x", "y"), out_specs=P(), check_vma=False)(x)
