"""A correct `update_with_donate` that jits `jnp.add` directly (JAX shares its caches across wrappers)."""

import jax
import jax.numpy as jnp

add_donating = jax.jit(jnp.add, donate_argnums=0)


def update_with_donate(state, delta):
    """Return `state + delta`, consuming `state`."""
    return add_donating(state, delta)
