"""Donates `delta` (argument 1) instead of `state`, so the caller loses `delta`; must fail test_state_consumed."""

import jax

_add = jax.jit(lambda state, delta: state + delta, donate_argnums=(1,))


def update_with_donate(state, delta):
    """Return `state + delta`, giving away the wrong buffer."""
    return _add(state, delta)
