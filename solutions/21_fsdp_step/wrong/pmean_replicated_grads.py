"""Differentiates the gathered weights inside shard_map and pmeans them whole; must fail test_grads_reduce_scattered."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def shard_params(params, mesh):
    return {k: jax.device_put(v, NamedSharding(mesh, P("fsdp"))) for k, v in params.items()}


def _loss(full, x, y):
    h = jax.nn.relu(x @ full["w1"] + full["b1"])
    return jnp.mean((h @ full["w2"] + full["b2"] - y) ** 2)


def loss_and_grads(params, batch, mesh):
    def body(p, x, y):
        full = {k: lax.all_gather(v, "fsdp", tiled=True) for k, v in p.items()}
        loss, grads = jax.value_and_grad(_loss)(full, x, y)
        return lax.pmean(loss, "fsdp"), lax.pmean(grads, "fsdp")

    x, y = batch
    return jax.shard_map(body, mesh=mesh, in_specs=P("fsdp"), out_specs=P())(params, x, y)
