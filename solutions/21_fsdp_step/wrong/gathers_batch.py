"""Gathers the batch to every device before the layers; must fail test_batch_stays_sharded."""

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, reshard
from jax.sharding import PartitionSpec as P


def shard_params(params, mesh):
    return {k: jax.device_put(v, NamedSharding(mesh, P("fsdp"))) for k, v in params.items()}


def loss_and_grads(params, batch, mesh):
    full = NamedSharding(mesh, P())
    x, y = (reshard(v, full) for v in batch)

    def loss(p):
        h = jax.nn.relu(x @ reshard(p["w1"], full) + reshard(p["b1"], full))
        return jnp.mean((h @ reshard(p["w2"], full) + reshard(p["b2"], full) - y) ** 2)

    return jax.value_and_grad(loss)(params)
