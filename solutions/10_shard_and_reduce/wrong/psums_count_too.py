"""Psums the block's sum and its element count together, two floats per device where the count is known while tracing; must fail test_psum_both_axes."""

from functools import partial

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

AXES = ("x", "y")


def make_mesh():
    """The course mesh."""
    return jax.make_mesh((2, 4), AXES, axis_types=(AxisType.Explicit,) * len(AXES))


def place(x, mesh):
    """device_put with the two-axis spec."""
    return jax.device_put(x, NamedSharding(mesh, P(*AXES)))


def _sum_and_count(block):
    """The block's total and its element count, both summed over the whole mesh."""
    local = jnp.stack([jnp.sum(block, dtype=jnp.float32), jnp.float32(block.size)])
    return lax.psum(local, AXES)


@partial(jax.jit, static_argnames="mesh")
def global_mean(x, mesh):
    """Total over count, each a psum over both axes."""
    both = jax.shard_map(_sum_and_count, mesh=mesh, in_specs=P(*AXES), out_specs=P())(x)
    return both[0] / both[1]
