"""device_put of this process's rows with the global sharding: JAX refuses, the rows differ per process;
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
    """device_put wants the whole array on every process, and each has only its own rows."""
    return jax.device_put(local_rows, NamedSharding(mesh, P("data")))


@jax.jit
def global_mean(x: jax.Array) -> jax.Array:
    """The per-feature mean: the sum over the sharded rows is one all-reduce between the processes."""
    return jnp.mean(x, axis=0)
