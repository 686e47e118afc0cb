"""Multiplies bfloat16 copies of x, the weights and the hidden units, accumulating in float32, which rounds away 3 digits before any sum; must fail test_float32_sum."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import PartitionSpec as P


def mlp(x: jax.Array, w1: jax.Array, b1: jax.Array, w2: jax.Array, b2: jax.Array,
        mesh: jax.sharding.Mesh) -> jax.Array:
    """`gelu(x @ w1 + b1) @ w2 + b2`, (B, D) float32, replicated on every device of `mesh`."""

    def partial_sum(x: jax.Array, w1: jax.Array, b1: jax.Array, w2: jax.Array) -> jax.Array:
        """One device: its F/8 hidden units, whole, then its share of the second matmul, summed over 'tp'."""
        bf16, f32 = jnp.bfloat16, jnp.float32  # bfloat16 operands for the MXU, float32 accumulation
        h = jax.nn.gelu(jnp.dot(x.astype(bf16), w1.astype(bf16), preferred_element_type=f32) + b1)
        return lax.psum(jnp.dot(h.astype(bf16), w2.astype(bf16), preferred_element_type=f32), "tp")

    summed = jax.shard_map(partial_sum, mesh=mesh, in_specs=(P(), P(None, "tp"), P("tp"), P("tp", None)),
                           out_specs=P())(x, w1, b1, w2)
    return summed + b2  # once, after the sum: inside it, every device would add its own copy
