"""Adds b1 after the relu (`relu(x @ w1) + b1`), so the hidden layer is not the task's; must fail test_loss_values."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def shard_params(params, mesh):
    return {k: jax.device_put(v, NamedSharding(mesh, P("fsdp"))) for k, v in params.items()}


def loss_and_grads(params, batch, mesh):
    x, y = batch
    count = y.size

    def local(p, x, y):
        full = {k: lax.all_gather(v, "fsdp", tiled=True) for k, v in p.items()}
        h = jax.nn.relu(x @ full["w1"]) + full["b1"]
        out = h @ full["w2"] + full["b2"]
        return lax.psum(jnp.sum((out - y) ** 2), "fsdp") / count

    f = jax.shard_map(local, mesh=mesh, in_specs=P("fsdp"), out_specs=P())
    return jax.value_and_grad(f)(params, x, y)
