"""A module-level jit with the mesh static; b2 enters the shard_map replicated and is added after the psum."""

import functools

import jax
from jax import lax
from jax.sharding import PartitionSpec as P


@functools.partial(jax.jit, static_argnames=("mesh",))
def mlp(x, w1, b1, w2, b2, mesh):
    def layer(x, w1, b1, w2, b2):
        hidden = jax.nn.gelu(x @ w1 + b1)
        return lax.psum(hidden @ w2, axis_name="tp") + b2

    specs = (P(), P(None, "tp"), P("tp"), P("tp", None), P())
    return jax.shard_map(layer, mesh=mesh, in_specs=specs, out_specs=P())(x, w1, b1, w2, b2)
