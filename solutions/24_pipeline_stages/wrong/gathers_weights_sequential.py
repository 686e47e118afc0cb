"""All-gathers the weights and runs the S layers one after another on every device; must fail test_weights_stay."""

import jax
import jax.numpy as jnp
from jax.sharding import NamedSharding, reshard
from jax.sharding import PartitionSpec as P


def pipeline(x, weights, mesh):
    """Every device gets every layer, then applies them in order to all microbatches at once."""
    everything = reshard(weights, NamedSharding(mesh, P()))
    h = x
    for s in range(weights.shape[0]):
        h = jnp.tanh(h @ everything[s])
    return h
