"""Prepares `functools.partial(jax.jit, ...)` at import but applies it on every call, building a new wrapper each time; must fail test_helper_built_once."""

import functools

import jax

_donating_jit = functools.partial(jax.jit, donate_argnums=(0,))


def _add(state, delta):
    """The elementwise update."""
    return state + delta


def update_with_donate(state, delta):
    """Return `state + delta` through a jitted wrapper made anew by each call."""
    return _donating_jit(_add)(state, delta)
