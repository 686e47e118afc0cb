"""The mean of the first shard this process holds: one device's rows; must fail test_global_mean."""

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


def global_batch(local_rows: np.ndarray, mesh: jax.sharding.Mesh) -> jax.Array:
    """The global (num_rows, F) array over every device of `mesh`, from what each process holds."""
    return jax.make_array_from_process_local_data(NamedSharding(mesh, P("data")), local_rows)


def global_mean(x):
    """The mean of x.addressable_shards[0]: 16 of the 64 rows."""
    return jnp.mean(x.addressable_shards[0].data, axis=0)
