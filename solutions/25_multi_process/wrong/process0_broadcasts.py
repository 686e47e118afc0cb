"""Process 0 reads everything and broadcasts it; process 1 reads nothing; must fail test_reads_own_rows."""


import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def load_shard(read_rows, num_rows, process_index, process_count):
    """Process 0 reads; everyone receives the whole dataset from it."""
    from jax.experimental import multihost_utils

    first = np.asarray(read_rows(0, 1))
    if process_index == 0:
        everything = np.concatenate([first, np.asarray(read_rows(1, num_rows))])
    else:
        everything = np.zeros((num_rows, first.shape[1]), first.dtype)
    everything = np.asarray(multihost_utils.broadcast_one_to_all(everything))
    per = num_rows // process_count
    return everything[process_index * per:(process_index + 1) * per]


def global_batch(local_rows: np.ndarray, mesh: jax.sharding.Mesh) -> jax.Array:
    """The global (num_rows, F) array over every device of `mesh`, from what each process holds."""
    return jax.make_array_from_process_local_data(NamedSharding(mesh, P("data")), local_rows)


@jax.jit
def global_mean(x: jax.Array) -> jax.Array:
    """The per-feature mean: the sum over the sharded rows is one all-reduce between the processes."""
    return jnp.mean(x, axis=0)
