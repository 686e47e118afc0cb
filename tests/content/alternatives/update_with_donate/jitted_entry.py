"""A correct `update_with_donate` that is itself the jitted, donating function."""

import functools

import jax


@functools.partial(jax.jit, donate_argnums=(0,))
def update_with_donate(state, delta):
    """Return `state + delta`, consuming `state`."""
    return state + delta
