"""Gathers the weights along their second axis (`all_gather(..., axis=1, tiled=True)`), so w1 comes out (D/8, 8H) instead of (D, H) and the first matmul's shapes do not fit; must fail test_traceable."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def shard_params(params, mesh):
    return {k: jax.device_put(v, NamedSharding(mesh, P("fsdp"))) for k, v in params.items()}


def _whole(v):
    return lax.all_gather(v, "fsdp", axis=v.ndim - 1, tiled=True)


def loss_and_grads(params, batch, mesh):
    def loss(p, x, y):
        h = jax.nn.relu(x @ _whole(p["w1"]) + _whole(p["b1"]))
        out = h @ _whole(p["w2"]) + _whole(p["b2"])
        return lax.psum(jnp.sum((out - y) ** 2), "fsdp") / (y.size * 8)

    f = jax.shard_map(loss, mesh=mesh, in_specs=(P("fsdp"), P("fsdp"), P("fsdp")), out_specs=P())
    return jax.value_and_grad(f)(params, *batch)
