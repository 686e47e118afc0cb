"""A Python-unrolled schedule held by an object with a jitted method, the outputs kept in a list and collected
with an all-gather of the stages' buffers, from which the last stage's is taken. An all-gather leaves the same
array on every device, which the VMA check does not know, so this `shard_map` turns it off."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import PartitionSpec as P


class GPipe:
    """One pipeline per mesh: the schedule is built once per shape."""

    def __init__(self, mesh):
        self.mesh = mesh
        self.axis = mesh.axis_names[0]
        self.stages = mesh.shape[self.axis]
        self.forward = jax.jit(self._forward)

    def _device(self, x, w):
        me = lax.axis_index(self.axis)
        micro, stages = x.shape[0], self.stages
        pending = None
        finished = []
        for t in range(micro + stages - 1):
            feed = x[t] if t < micro else jnp.zeros_like(x[0])
            inp = feed if pending is None else jnp.where(me == 0, feed, pending)
            out = jnp.tanh(jnp.dot(inp, w[0]))
            if t >= stages - 1:
                finished.append(out)
            if t + 1 < micro + stages - 1:
                pending = lax.ppermute(out, self.axis, perm=[(s, s + 1) for s in range(stages - 1)])
        every_stage = lax.all_gather(jnp.stack(finished), self.axis)
        return every_stage[stages - 1]

    def _forward(self, x, weights):
        return jax.shard_map(self._device, mesh=self.mesh, in_specs=(P(), P(self.axis)), out_specs=P(),
                             check_vma=False)(x, weights)


def pipeline(x, weights, mesh):
    """Run the microbatches through the S stages of `mesh`."""
    return GPipe(mesh).forward(x, weights)
