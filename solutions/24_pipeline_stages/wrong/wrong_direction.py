"""Feeds microbatches in at the last stage and passes activations left, so the layers run in reverse; must fail test_permute_direction."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import PartitionSpec as P


def pipeline(x, weights, mesh):
    """The pipe runs from stage S - 1 down to stage 0, which collects the outputs."""
    axis = mesh.axis_names[0]
    stages = mesh.shape[axis]
    micro = x.shape[0]
    to_previous = [(s, s - 1) for s in range(1, stages)]

    def stage(x, w):
        me = lax.axis_index(axis)
        arriving = jnp.zeros_like(x[0])
        done = jnp.zeros_like(x)
        for t in range(micro + stages - 1):
            taken = jnp.where(me == stages - 1, x[min(t, micro - 1)], arriving)
            out = jnp.tanh(taken @ w[0])
            if t >= stages - 1:
                done = done.at[t - (stages - 1)].set(jnp.where(me == 0, out, 0.0))
            arriving = lax.ppermute(out, axis, to_previous)
        return lax.psum(done, axis)

    return jax.shard_map(stage, mesh=mesh, in_specs=(P(), P(axis)), out_specs=P())(x, weights)
