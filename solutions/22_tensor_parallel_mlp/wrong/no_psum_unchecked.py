"""Skips the psum and silences the replication check, so each device keeps its partial sum; must fail test_values."""

import jax
from jax.sharding import PartitionSpec as P


def mlp(x, w1, b1, w2, b2, mesh):
    def body(x, w1, b1, w2):
        return jax.nn.gelu(x @ w1 + b1) @ w2

    specs = (P(), P(None, "tp"), P("tp"), P("tp", None))
    return jax.shard_map(body, mesh=mesh, in_specs=specs, out_specs=P(), check_vma=False)(x, w1, b1, w2) + b2
