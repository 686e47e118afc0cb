"""Loops with a `while_loop` on a traced step counter, so the permute steps cannot be counted; must fail test_permute_steps."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import PartitionSpec as P


def pipeline(x, weights, mesh):
    """GPipe in a while_loop whose bound is data."""
    axis = mesh.axis_names[0]
    stages = mesh.shape[axis]
    micro = x.shape[0]
    to_next = [(s, s + 1) for s in range(stages - 1)]

    def stage(x, w):
        me = lax.axis_index(axis)

        def step(carry):
            t, arriving, done = carry
            taken = jnp.where(me == 0, x[jnp.minimum(t, micro - 1)], arriving)
            out = jnp.tanh(taken @ w[0])
            m = t - (stages - 1)
            row = jnp.where((me == stages - 1) & (m >= 0), out, 0.0)
            done = done.at[jnp.maximum(m, 0)].add(row)
            return t + 1, lax.ppermute(out, axis, to_next), done

        start = (jnp.int32(0), lax.pcast(jnp.zeros_like(x[0]), (axis,), to="varying"),
                 lax.pcast(jnp.zeros_like(x), (axis,), to="varying"))
        _, _, done = lax.while_loop(lambda c: c[0] < micro + stages - 1, step, start)
        return lax.psum(done, axis)

    return jax.shard_map(stage, mesh=mesh, in_specs=(P(), P(axis)), out_specs=P())(x, weights)
