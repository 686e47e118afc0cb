"""Updates the replicated `scale` to another value on every device (device 0's is the right one), while its sharding still says P(); must fail test_output_sharding."""

import functools

import jax
from jax.sharding import PartitionSpec as P


@functools.partial(jax.jit, donate_argnums=0)
def sgd_step(params, grads, lr):
    """The update, with a per-device offset on the replicated scalar that reading the array whole never shows."""
    new = {name: params[name] - lr * grads[name] for name in params}
    mesh = jax.typeof(new["scale"]).sharding.mesh

    def offset(s):
        # Each device adds its own position: the copies differ, and the spec still claims they agree.
        return s + 0.5 * (jax.lax.axis_index("x") * 4 + jax.lax.axis_index("y"))

    new["scale"] = jax.shard_map(offset, mesh=mesh, in_specs=P(), out_specs=P(), check_vma=False)(new["scale"])
    return new
