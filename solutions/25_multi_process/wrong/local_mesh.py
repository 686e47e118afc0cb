"""A mesh of this process's devices only: the array lives on 2 devices and holds one process's rows;
must fail test_global_batch."""

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def load_shard(read_rows: Callable[[int, int], np.ndarray], num_rows: int, process_index: int,
               process_count: int) -> np.ndarray:
    """This process's contiguous block of rows, read once."""
    start = process_index * num_rows // process_count
    stop = (process_index + 1) * num_rows // process_count
    return np.asarray(read_rows(start, stop))


def global_batch(local_rows, mesh):
    """A mesh over jax.local_devices(): global in name only."""
    from jax.sharding import Mesh

    local = Mesh(np.array(jax.local_devices()), ("data",))
    return jax.make_array_from_process_local_data(NamedSharding(local, P("data")), local_rows)


@jax.jit
def global_mean(x: jax.Array) -> jax.Array:
    """The per-feature mean: the sum over the sharded rows is one all-reduce between the processes."""
    return jnp.mean(x, axis=0)
