"""Each process reads every p-th row (i, i + p, ...), not its block: the mean is still right;
must fail test_reads_own_rows."""


import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def load_shard(read_rows, num_rows, process_index, process_count):
    """Rows i, i + p, i + 2p, ...: a share of the rows, but not the block this process's devices hold."""
    return np.concatenate([np.asarray(read_rows(r, r + 1)) for r in range(process_index, num_rows, process_count)])


def global_batch(local_rows: np.ndarray, mesh: jax.sharding.Mesh) -> jax.Array:
    """The global (num_rows, F) array over every device of `mesh`, from what each process holds."""
    return jax.make_array_from_process_local_data(NamedSharding(mesh, P("data")), local_rows)


@jax.jit
def global_mean(x: jax.Array) -> jax.Array:
    """The per-feature mean: the sum over the sharded rows is one all-reduce between the processes."""
    return jnp.mean(x, axis=0)
