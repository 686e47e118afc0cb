"""Takes the pmean of the block sums and then divides by the global count, dividing by the 8 devices twice; must fail test_mean_values."""

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
        return lax.pmean(jnp.sum(block), ("x", "y")) / x.size

    return jax.shard_map(body, mesh=mesh, in_specs=P("x", "y"), out_specs=P())(x)
