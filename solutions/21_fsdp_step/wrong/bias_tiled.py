"""Tiles each device's own slice of the biases 8 times instead of gathering them; must fail test_loss_values."""

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
        w1 = lax.all_gather(p["w1"], "fsdp", tiled=True)
        w2 = lax.all_gather(p["w2"], "fsdp", tiled=True)
        h = jax.nn.relu(x @ w1 + jnp.tile(p["b1"], 8))
        out = h @ w2 + jnp.tile(p["b2"], 8)
        return lax.psum(jnp.sum((out - y) ** 2), "fsdp") / count

    return jax.value_and_grad(jax.shard_map(local, mesh=mesh, in_specs=P("fsdp"), out_specs=P()))(params, x, y)
