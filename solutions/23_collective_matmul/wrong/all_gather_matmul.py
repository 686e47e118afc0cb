"""All-gathers x, then multiplies it whole: nothing overlaps the gather; must fail test_only_collective_permutes."""

import jax
from jax import lax
from jax.sharding import PartitionSpec as P


def ag_matmul(x, w, mesh):
    """x @ w by columns."""
    axis = mesh.axis_names[0]

    def per_device(chunk, w_cols):
        whole = lax.all_gather(chunk, axis, tiled=True)
        return whole @ w_cols

    return jax.shard_map(per_device, mesh=mesh, in_specs=(P(axis, None), P(None, axis)),
                         out_specs=P(None, axis))(x, w)
