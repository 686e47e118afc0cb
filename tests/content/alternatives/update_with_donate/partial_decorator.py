"""A correct `update_with_donate` whose helper is decorated with functools.partial(jax.jit, ...)."""

import functools

import jax


@functools.partial(jax.jit, donate_argnums=(0,))
def _step(state, delta):
    """Add the update; `state` is donated by the decorator."""
    return state + delta


def update_with_donate(state, delta):
    """Return `state + delta`, consuming `state`."""
    return _step(state, delta)
