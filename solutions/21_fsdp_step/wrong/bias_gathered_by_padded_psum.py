"""Gathers b1 by padding its shard with zeros and psumming, an all-reduce in place of an all-gather; must fail test_grads_reduce_scattered."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def shard_params(params: dict, mesh: jax.sharding.Mesh) -> dict:
    """Every leaf of `params` placed on `mesh`, sharded P('fsdp') on its leading axis."""
    return {name: jax.device_put(leaf, NamedSharding(mesh, P("fsdp"))) for name, leaf in params.items()}


def loss_and_grads(params: dict, batch: tuple, mesh: jax.sharding.Mesh) -> tuple:
    """(mean squared error of the MLP on `batch`, its gradients with respect to `params`), all sharded P('fsdp')."""
    x, y = batch
    count = y.size  # B * O, the global number of squared errors

    def local_loss(p: dict, x: jax.Array, y: jax.Array) -> jax.Array:
        """One device's rows of the batch against the weights gathered whole, layer by layer."""
        w1 = lax.all_gather(p["w1"], "fsdp", tiled=True)
        n = p["b1"].shape[0]  # b1 gathered by hand: this device's shard at its offset, zeros elsewhere, summed
        padded = lax.dynamic_update_slice(jnp.zeros((n * lax.axis_size("fsdp"),), p["b1"].dtype), p["b1"],
                                          (lax.axis_index("fsdp") * n,))
        b1 = lax.psum(padded, "fsdp")
        h = jax.nn.relu(x @ w1 + b1)
        w2 = lax.all_gather(p["w2"], "fsdp", tiled=True)
        b2 = lax.all_gather(p["b2"], "fsdp", tiled=True)
        out = h @ w2 + b2
        return lax.psum(jnp.sum((out - y) ** 2), "fsdp") / count

    loss = jax.shard_map(local_loss, mesh=mesh, in_specs=P("fsdp"), out_specs=P())
    # The gradient of each tiled all_gather is a psum_scatter: every device gets back its own 1/8.
    return jax.value_and_grad(loss)(params, x, y)
