"""Keeps the mean on device 0 only, zeros on the others, and claims replication with check_vma=False; must fail test_mean_replicated."""

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
        total = lax.psum(jnp.sum(block), ("x", "y"))
        first = lax.axis_index(("x", "y")) == 0
        return jnp.where(first, total / x.size, 0.0)   # "only the first device needs the answer"

    return jax.shard_map(body, mesh=mesh, in_specs=P("x", "y"), out_specs=P(), check_vma=False)(x)
