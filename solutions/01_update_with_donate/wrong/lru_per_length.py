"""Builds the donating jit inside the call through an lru_cache keyed on the length, so each new length builds a new wrapper; must fail test_helper_built_once."""

import functools

import jax


@functools.lru_cache(maxsize=None)
def _adder(n):
    """A donating addition for arrays of length `n`, made the first time that length is seen."""
    return jax.jit(lambda state, delta: state + delta, donate_argnums=(0,))


def update_with_donate(state, delta):
    """Return `state + delta` through the jit kept for this length."""
    return _adder(state.shape[0])(state, delta)
