"""Gathers w1 and b1 whole before the first matmul; must fail test_no_other_collectives."""

import jax
from jax import lax
from jax.sharding import PartitionSpec as P

IN = (P(), P(None, "tp"), P("tp"), P("tp", None))


def mlp(x, w1, b1, w2, b2, mesh):
    def body(x, w1, b1, w2):
        w1 = lax.all_gather(w1, "tp", axis=1, tiled=True)
        b1 = lax.all_gather(b1, "tp", tiled=True)
        me, f = lax.axis_index("tp"), w2.shape[0]
        h = lax.dynamic_slice_in_dim(jax.nn.gelu(x @ w1 + b1), me * f, f, axis=1)
        return lax.psum(h @ w2, "tp")

    return jax.shard_map(body, mesh=mesh, in_specs=IN, out_specs=P())(x, w1, b1, w2) + b2
