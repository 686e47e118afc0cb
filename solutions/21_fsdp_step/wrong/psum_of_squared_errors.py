"""Sums the devices' squared-error arrays with a psum and only then adds them up; must fail test_grads_reduce_scattered.

The loss is right (summing is linear), but every device sends its whole (B/8, O) array of errors
across the mesh where one number, its own sum, would do.
"""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def shard_params(params, mesh):
    return {name: jax.device_put(value, NamedSharding(mesh, P("fsdp"))) for name, value in params.items()}


def loss_and_grads(params, batch, mesh):
    x, y = batch

    def per_device(p, x_rows, y_rows):
        gather = lambda name: lax.all_gather(p[name], "fsdp", tiled=True)  # noqa: E731
        hidden = jax.nn.relu(jnp.dot(x_rows, gather("w1")) + gather("b1"))
        errors = jnp.dot(hidden, gather("w2")) + gather("b2") - y_rows
        everyone = lax.psum(errors * errors, "fsdp")  # the whole error array crosses the devices
        return jnp.sum(everyone) / y.size

    loss = jax.shard_map(per_device, mesh=mesh, in_specs=P("fsdp"), out_specs=P())
    return jax.value_and_grad(loss)(params, x, y)
