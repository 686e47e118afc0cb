"""Reference solution for `shard_and_reduce`: a 2x4 Explicit mesh, a `P('x', 'y')` placement, and a mean
reduced on each device's block before one all-reduce of a scalar."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P


def make_mesh() -> jax.sharding.Mesh:
    """A 2x4 mesh over the 8 devices, axes ("x", "y"), both Explicit."""
    return jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Explicit, AxisType.Explicit))


def place(x: jax.Array, mesh: jax.sharding.Mesh) -> jax.Array:
    """`x` laid out with rows over "x" and columns over "y": each device holds an (R/2, C/4) block."""
    return jax.device_put(x, NamedSharding(mesh, P("x", "y")))


def global_mean(x: jax.Array, mesh: jax.sharding.Mesh) -> jax.Array:
    """The mean of every element of `x` (sharded P("x", "y")), a float32 scalar replicated on the mesh."""
    count = x.size  # the global number of elements: a static Python int, known while tracing

    def block_sum(block: jax.Array) -> jax.Array:
        """Runs once per device on its (R/2, C/4) block; only the scalar partial sum travels."""
        return lax.psum(jnp.sum(block), ("x", "y")) / count

    # out_specs=P() says every device ends with the same value, which holds since the psum covers both axes.
    return jax.shard_map(block_sum, mesh=mesh, in_specs=P("x", "y"), out_specs=P())(x)
