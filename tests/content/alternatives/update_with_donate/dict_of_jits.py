"""A correct `update_with_donate` that looks its donating jit up in a table built at import."""

import jax
from jax import numpy as jnp

_OPS = {
    "add": jax.jit(jnp.add, donate_argnums=0),
    "sub": jax.jit(jnp.subtract, donate_argnums=0),
}


def update_with_donate(state, delta):
    """Return `state + delta`, consuming `state`."""
    return _OPS["add"](state, delta)
