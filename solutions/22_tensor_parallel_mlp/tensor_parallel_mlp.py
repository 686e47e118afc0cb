"""Exercise `tensor_parallel_mlp`: a Megatron-style MLP, w1 split by columns and w2 by rows, with one psum.

Run `course show tensor_parallel_mlp` for the lesson, and `course check` to grade this file. To try it
yourself, get 8 CPU devices first: `jax.config.update("jax_num_cpu_devices", 8)` right after `import jax`.
"""

import jax
from jax import lax
from jax.sharding import PartitionSpec as P


def mlp(x: jax.Array, w1: jax.Array, b1: jax.Array, w2: jax.Array, b2: jax.Array,
        mesh: jax.sharding.Mesh) -> jax.Array:
    """`gelu(x @ w1 + b1) @ w2 + b2`, (B, D) float32, replicated on every device of `mesh`."""

    def partial_sum(x: jax.Array, w1: jax.Array, b1: jax.Array, w2: jax.Array) -> jax.Array:
        """One device: its F/8 hidden units, whole, then its share of the second matmul, summed over 'tp'."""
        h = jax.nn.gelu(x @ w1 + b1)  # (B, F/8): no communication, each unit is this device's own
        return lax.psum(h @ w2, "tp")  # the 8 partial (B, D) sums added: the layer's one collective

    summed = jax.shard_map(partial_sum, mesh=mesh, in_specs=(P(), P(None, "tp"), P("tp"), P("tp", None)),
                           out_specs=P())(x, w1, b1, w2)
    return summed + b2  # once, after the sum: inside it, every device would add its own copy
