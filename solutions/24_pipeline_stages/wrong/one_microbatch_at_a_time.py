"""Sends each microbatch through all stages before the next one enters, M * (S - 1) permutes; must fail test_permute_steps."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import PartitionSpec as P


def pipeline(x, weights, mesh):
    """Microbatch m alone in the pipe: S steps of it, then microbatch m + 1."""
    axis = mesh.axis_names[0]
    stages = mesh.shape[axis]
    to_next = [(s, s + 1) for s in range(stages - 1)]

    def stage(x, w):
        me = lax.axis_index(axis)
        done = jnp.zeros_like(x)
        for m in range(x.shape[0]):
            h = x[m]
            for s in range(stages):
                out = jnp.tanh(h @ w[0])
                if s < stages - 1:
                    h = lax.ppermute(out, axis, to_next)
            done = done.at[m].set(jnp.where(me == stages - 1, out, 0.0))
        return lax.psum(done, axis)

    return jax.shard_map(stage, mesh=mesh, in_specs=(P(), P(axis)), out_specs=P())(x, weights)
