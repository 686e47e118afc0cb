"""Donates both arguments although only one output exists, so JAX warns that a donated buffer was not usable; must fail test_helper_aliases_state."""

import jax

_add = jax.jit(lambda state, delta: state + delta, donate_argnums=(0, 1))


def update_with_donate(state, delta):
    """Return `state + delta`, offering a buffer that no output can take."""
    return _add(state, delta)
