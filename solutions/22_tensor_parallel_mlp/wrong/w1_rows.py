"""Re-splits w1 by rows, so the pre-activations need an all-reduce of their own; must fail test_one_all_reduce."""

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, reshard
from jax.sharding import PartitionSpec as P

IN = (P(), P(None, "tp"), P("tp"), P("tp", None))


def mlp(x, w1, b1, w2, b2, mesh):
    rows = reshard(w1, NamedSharding(mesh, P("tp", None)))
    pre = jnp.dot(reshard(x, NamedSharding(mesh, P(None, "tp"))), rows, out_sharding=NamedSharding(mesh, P(None, "tp")))
    return jnp.dot(jax.nn.gelu(pre + b1), w2, out_sharding=NamedSharding(mesh, P())) + b2
