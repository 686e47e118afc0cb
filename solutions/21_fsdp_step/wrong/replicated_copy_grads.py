"""Takes the gradients of a replicated copy of the params, so they come back whole; must fail test_grads_sharded."""

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, reshard
from jax.sharding import PartitionSpec as P


def shard_params(params, mesh):
    return {k: jax.device_put(v, NamedSharding(mesh, P("fsdp"))) for k, v in params.items()}


def loss_and_grads(params, batch, mesh):
    x, y = batch
    copy = {k: reshard(v, NamedSharding(mesh, P())) for k, v in params.items()}

    def loss(p):
        h = jax.nn.relu(x @ p["w1"] + p["b1"])
        return jnp.mean((h @ p["w2"] + p["b2"] - y) ** 2)

    return jax.value_and_grad(loss)(copy)
