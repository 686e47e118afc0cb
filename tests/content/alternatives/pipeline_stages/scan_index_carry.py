"""The JAX docs' shape of a pipeline: `lax.scan` over a step range with the step index as xs, a shift helper,
and the microbatch chosen by `jnp.take`; stage 0 feeds zeros once the microbatches run out."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import PartitionSpec as P


def _shift_right(v, axis, size):
    """Send every stage's value to the next stage; stage 0 receives zeros."""
    return lax.ppermute(v, axis, [(i, i + 1) for i in range(size - 1)])


def pipeline(x, weights, mesh):
    """GPipe forward pass over the 'stage' axis."""
    axis = mesh.axis_names[0]
    size = mesh.shape[axis]
    micro = x.shape[0]

    def per_device(x, w):
        stage_id = lax.axis_index(axis)

        def step(carry, t):
            state, outputs = carry
            fed = jnp.where(t < micro, jnp.take(x, jnp.minimum(t, micro - 1), axis=0), 0.0)
            state = jnp.where(stage_id == 0, fed, state)
            state = jnp.tanh(state @ w[0])
            done = t - (size - 1)
            update = jnp.where((stage_id == size - 1) & (done >= 0), state, 0.0)
            outputs = outputs.at[jnp.maximum(done, 0)].add(update)
            return (_shift_right(state, axis, size), outputs), None

        zeros = lax.pcast((jnp.zeros_like(x[0]), jnp.zeros_like(x)), (axis,), to="varying")
        (_, outputs), _ = lax.scan(step, zeros, jnp.arange(micro + size - 1))
        return lax.psum(outputs, axis)

    return jax.shard_map(per_device, mesh=mesh, in_specs=(P(), P(axis)), out_specs=P())(x, weights)
