"""Adds the 8 devices' local means with a psum instead of averaging them; must fail test_loss_values."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def shard_params(params, mesh):
    return {k: jax.device_put(v, NamedSharding(mesh, P("fsdp"))) for k, v in params.items()}


def loss_and_grads(params, batch, mesh):
    def local(p, x, y):
        w = {k: lax.all_gather(v, "fsdp", tiled=True) for k, v in p.items()}
        h = jax.nn.relu(x @ w["w1"] + w["b1"])
        return lax.psum(jnp.mean((h @ w["w2"] + w["b2"] - y) ** 2), "fsdp")

    x, y = batch
    return jax.value_and_grad(jax.shard_map(local, mesh=mesh, in_specs=P("fsdp"), out_specs=P()))(params, x, y)
