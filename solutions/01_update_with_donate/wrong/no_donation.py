"""Jits the addition without donate_argnums, so `state` is never given away; must fail test_state_consumed."""

import jax

_add = jax.jit(lambda state, delta: state + delta)


def update_with_donate(state, delta):
    """Return `state + delta`, but allocate a new buffer for it every time."""
    return _add(state, delta)
