"""Treats donation as an in-place update and returns `state` after the call, an array that is now deleted; must fail test_no_read_after_donate."""

import jax

_add = jax.jit(lambda state, delta: state + delta, donate_argnums=(0,))


def update_with_donate(state, delta):
    """Call the donating helper and return the old `state`, as if it had been updated in place."""
    _add(state, delta)
    return state
