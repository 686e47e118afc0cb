"""The JAX docs' multi-host spelling: `multihost_utils.host_local_array_to_global_array` for the batch, and a
jitted `functools.partial(jnp.mean, axis=0)` for the mean."""

import functools

import jax
import jax.numpy as jnp
from jax.experimental import multihost_utils
from jax.sharding import PartitionSpec as P


def load_shard(read_rows, num_rows, process_index, process_count):
    return read_rows(start=num_rows * process_index // process_count,
                     stop=num_rows * (process_index + 1) // process_count)


def global_batch(local_rows, mesh):
    return multihost_utils.host_local_array_to_global_array(local_rows, mesh, P("data"))


global_mean = jax.jit(functools.partial(jnp.mean, axis=0))
