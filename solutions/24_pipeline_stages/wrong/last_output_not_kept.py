"""Runs all M + S - 1 steps but keeps outputs only for m < M - 1, so the last output stays zero; must fail test_values."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import PartitionSpec as P


def pipeline(x: jax.Array, weights: jax.Array, mesh: jax.sharding.Mesh) -> jax.Array:
    """`out[m] = tanh(... tanh(x[m] @ W0) ... @ W_{S-1})` for every microbatch m, replicated on the mesh."""
    axis = mesh.axis_names[0]
    stages = mesh.shape[axis]
    micro = x.shape[0]
    to_next = [(s, s + 1) for s in range(stages - 1)]  # the last stage sends nowhere: its output is done

    def stage(x: jax.Array, w: jax.Array) -> jax.Array:
        """One device: layer `me` of the network, applied to whatever reaches it at each step."""
        me = lax.axis_index(axis)
        arriving = jnp.zeros_like(x[0])
        done = jnp.zeros_like(x)
        for t in range(micro + stages - 1):  # M steps of work, S - 1 of them filling or draining the pipe
            # Stage 0 starts microbatch t (while there is one); the others take what their left neighbour sent.
            taken = jnp.where(me == 0, x[min(t, micro - 1)], arriving)
            out = jnp.tanh(taken @ w[0])
            m = t - (stages - 1)  # the microbatch leaving the last stage at this step
            if 0 <= m < micro - 1:  # off by one: the last microbatch's output is never kept
                done = done.at[m].set(jnp.where(me == stages - 1, out, 0.0))
            if t < micro + stages - 2:  # the last step's output goes nowhere
                arriving = lax.ppermute(out, axis, to_next)
        return lax.psum(done, axis)  # only the last stage's buffer is non-zero: the sum is its copy

    return jax.shard_map(stage, mesh=mesh, in_specs=(P(), P(axis)), out_specs=P())(x, weights)
