"""A correct `update_with_donate` that donates by name and calls its helper with keywords."""

import jax
import jax.numpy as jnp


def _add(state, delta):
    """The update itself."""
    return jnp.add(state, delta)


_update = jax.jit(_add, donate_argnames=("state",))


def update_with_donate(state, delta):
    """Hand `state` to the helper by name."""
    return _update(state=state, delta=delta)
