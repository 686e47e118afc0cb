"""Passes `delta` into the donated first slot of a correct helper, so `delta` is consumed and `state` survives; must fail test_state_consumed."""

import jax

_add = jax.jit(lambda a, b: a + b, donate_argnums=0)


def update_with_donate(state, delta):
    """Return `state + delta`, giving `delta`'s buffer away by putting it first."""
    return _add(delta, state)
