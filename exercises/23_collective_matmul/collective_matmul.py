"""Exercise `collective_matmul`: `x @ w` with x's row chunks passed round a ring of `ppermute`s, one matmul per chunk.

Run `course show collective_matmul` for the lesson, and `course check` to grade this file. To try it
yourself, get 8 CPU devices first: `jax.config.update("jax_num_cpu_devices", 8)` right after `import jax`.
"""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import PartitionSpec as P


def ag_matmul(x: jax.Array, w: jax.Array, mesh: jax.sharding.Mesh) -> jax.Array:
    """`x @ w`, as (M, N) sharded by columns, `P(None, axis)`.

    `mesh` is 1-D over 8 devices (axis `mesh.axis_names[0]`); `x` is float32 (M, K) sharded by rows,
    `P(axis, None)`, and `w` float32 (K, N) sharded by columns, `P(None, axis)`; M and N are multiples
    of 8. Move data only with `lax.ppermute`: each device multiplies the chunk of x it holds by its
    columns of w while the next chunk travels.
    """
    # TODO: a jax.shard_map whose per-device function runs the ring: 8 chunk products, 7 permutes.
    raise NotImplementedError("ag_matmul is not written yet")
