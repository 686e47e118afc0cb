"""Leaves out the relu (`h = x @ w1 + b1`), so the two layers collapse into one linear map; must fail test_loss_values."""

from functools import partial

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def shard_params(params, mesh):
    return jax.tree.map(lambda leaf: jax.device_put(leaf, NamedSharding(mesh, P("fsdp"))), params)


def loss_and_grads(params, batch, mesh):
    @partial(jax.shard_map, mesh=mesh, in_specs=P("fsdp"), out_specs=P())
    def loss(p, x, y):
        full = {k: lax.all_gather(v, "fsdp", tiled=True) for k, v in p.items()}
        h = x @ full["w1"] + full["b1"]
        return lax.pmean(jnp.mean((h @ full["w2"] + full["b2"] - y) ** 2), "fsdp")

    return jax.value_and_grad(loss)(params, *batch)
