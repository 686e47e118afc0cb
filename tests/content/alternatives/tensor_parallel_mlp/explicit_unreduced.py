"""Explicit mode with the partial sums kept unreduced: the second matmul's result is typed unreduced over 'tp',
and one reshard to P() is the layer's one all-reduce."""

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def mlp(x, w1, b1, w2, b2, mesh):
    h = jax.nn.gelu(x @ w1 + b1)
    partial = jnp.einsum("bf,fd->bd", h, w2, out_sharding=NamedSharding(mesh, P(None, None, unreduced={"tp"})))
    return jax.sharding.reshard(partial, NamedSharding(mesh, P())) + b2
