"""Replicates the weights and lets each stage pick its layer by index, all S layers on every device; must fail test_weights_stay."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import NamedSharding, reshard
from jax.sharding import PartitionSpec as P


def pipeline(x, weights, mesh):
    """A correct schedule, but every device holds all the weights and indexes its own."""
    axis = mesh.axis_names[0]
    stages = mesh.shape[axis]
    micro = x.shape[0]
    to_next = [(s, s + 1) for s in range(stages - 1)]
    everything = reshard(weights, NamedSharding(mesh, P()))

    def stage(x, ws):
        me = lax.axis_index(axis)
        w = ws[me]
        arriving = jnp.zeros_like(x[0])
        done = jnp.zeros_like(x)
        for t in range(micro + stages - 1):
            taken = jnp.where(me == 0, x[min(t, micro - 1)], arriving)
            out = jnp.tanh(taken @ w)
            if t >= stages - 1:
                done = done.at[t - (stages - 1)].set(jnp.where(me == stages - 1, out, 0.0))
            arriving = lax.ppermute(out, axis, to_next)
        return lax.psum(done, axis)

    return jax.shard_map(stage, mesh=mesh, in_specs=(P(), P()), out_specs=P())(x, everything)
