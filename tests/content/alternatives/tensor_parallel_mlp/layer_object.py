"""A layer object that builds its shard_map per mesh and keeps it in a dict."""

import jax
from jax import lax
from jax.sharding import PartitionSpec as P


class TensorParallelMLP:
    def __init__(self, axis):
        self.axis = axis
        self.built = {}

    def _local(self, x, w1, b1, w2):
        return lax.psum(jax.nn.gelu(x @ w1 + b1) @ w2, self.axis)

    def __call__(self, x, w1, b1, w2, b2, mesh):
        if mesh not in self.built:
            a = self.axis
            self.built[mesh] = jax.shard_map(self._local, mesh=mesh, in_specs=(P(), P(None, a), P(a), P(a, None)),
                                             out_specs=P())
        return self.built[mesh](x, w1, b1, w2) + b2


_layer = TensorParallelMLP("tp")


def mlp(x, w1, b1, w2, b2, mesh):
    return _layer(x, w1=w1, b1=b1, w2=w2, b2=b2, mesh=mesh)
