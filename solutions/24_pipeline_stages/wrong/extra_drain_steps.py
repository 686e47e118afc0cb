"""Keeps stepping S - 1 more times after the last microbatch is out, M + 2S - 2 steps; must fail test_permute_steps."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import PartitionSpec as P


def pipeline(x, weights, mesh):
    """Right values, but the pipe is drained for longer than it takes to empty."""
    axis = mesh.axis_names[0]
    stages = mesh.shape[axis]
    micro = x.shape[0]
    to_next = [(s, s + 1) for s in range(stages - 1)]

    def stage(x, w):
        me = lax.axis_index(axis)
        arriving = jnp.zeros_like(x[0])
        done = jnp.zeros_like(x)
        for t in range(micro + 2 * stages - 2):
            taken = jnp.where(me == 0, x[min(t, micro - 1)], arriving)
            out = jnp.tanh(taken @ w[0])
            m = t - (stages - 1)
            if 0 <= m < micro:
                done = done.at[m].set(jnp.where(me == stages - 1, out, 0.0))
            arriving = lax.ppermute(out, axis, to_next)
        return lax.psum(done, axis)

    return jax.shard_map(stage, mesh=mesh, in_specs=(P(), P(axis)), out_specs=P())(x, weights)
