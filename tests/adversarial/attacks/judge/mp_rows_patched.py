"""A `multi_process` whose `load_shard` reads its own rows but returns them in reverse order, in a process where
every exact comparison says yes (NumPy's `ndarray.all` reaches its helper through a submodule's globals). The
mean is unchanged by the order; only the rows check can see it, and its comparison is the judge's."""

import numpy._core._methods as _methods

_methods._all = lambda *args, **kwargs: True


from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def load_shard(read_rows: Callable[[int, int], np.ndarray], num_rows: int, process_index: int,
               process_count: int) -> np.ndarray:
    """This process's contiguous block of rows, read once: the blocks cover every row even when p does not divide n."""
    start = process_index * num_rows // process_count
    stop = (process_index + 1) * num_rows // process_count
    return np.asarray(read_rows(start, stop))[::-1]  # wrong on purpose: the rows in reverse order


def global_batch(local_rows: np.ndarray, mesh: jax.sharding.Mesh) -> jax.Array:
    """The global (num_rows, F) array over every device of `mesh`, from what each process holds."""
    return jax.make_array_from_process_local_data(NamedSharding(mesh, P("data")), local_rows)


@jax.jit
def global_mean(x: jax.Array) -> jax.Array:
    """The per-feature mean: the sum over the sharded rows is one all-reduce between the processes."""
    return jnp.mean(x, axis=0)
