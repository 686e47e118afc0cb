"""Exercise `shard_and_reduce`: build a 2x4 mesh, shard an array over it, and reduce it to its mean.

Run `course show shard_and_reduce` for the lesson, and `course check` to grade this file. To try it
yourself, get 8 CPU devices first: `jax.config.update("jax_num_cpu_devices", 8)` right after `import jax`.
"""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P


def make_mesh() -> jax.sharding.Mesh:
    """A 2x4 mesh over all 8 devices, axes ("x", "y"), both Explicit."""
    # TODO: jax.make_mesh(...) with Explicit axis types.
    raise NotImplementedError("make_mesh is not written yet")


def place(x: jax.Array, mesh: jax.sharding.Mesh) -> jax.Array:
    """`x` (float32, shape (R, C)) sharded NamedSharding(mesh, P("x", "y"))."""
    # TODO: put x on the mesh, rows over "x" and columns over "y".
    raise NotImplementedError("place is not written yet")


def global_mean(x: jax.Array, mesh: jax.sharding.Mesh) -> jax.Array:
    """The mean of every element of `x` (sharded P("x", "y")): a float32 scalar replicated on the mesh.

    Written with jax.shard_map over the local blocks and lax.psum (or pmean) over both mesh axes;
    it must work under jax.jit, so no jax.set_mesh and no Python floats inside.
    """
    # TODO: sum each device's block, then one psum over ("x", "y"), divided by the global count.
    raise NotImplementedError("global_mean is not written yet")
