"""Exercise `ring_allreduce`: sum the rows of a sharded array with neighbour-to-neighbour `ppermute`s only.

Run `course show ring_allreduce` for the lesson, and `course check` to grade this file. To try it
yourself, get 8 CPU devices first: `jax.config.update("jax_num_cpu_devices", 8)` right after `import jax`.
"""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import PartitionSpec as P


def ring_allreduce(x: jax.Array, mesh: jax.sharding.Mesh) -> jax.Array:
    """Every row of the result is `x.sum(0)`.

    `mesh` is 1-D over 8 devices (axis `mesh.axis_names[0]`); `x` is float32 (8, n), n a multiple
    of 8, sharded by rows. The result is (8, n), sharded like `x`. Move data only with
    `lax.ppermute`, every step in one direction: a reduce-scatter, then an all-gather.
    """
    # TODO: a jax.shard_map whose per-device function cuts its row into 8 chunks and runs the ring.
    raise NotImplementedError("ring_allreduce is not written yet")
