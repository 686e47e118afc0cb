"""Jits the entry point without donation around a helper that donates: inside the outer trace the inner donation is only a request, and the outer call gives nothing up, so `state` survives; must fail test_state_consumed."""

import jax

_inner = jax.jit(lambda s, d: s + d, donate_argnums=(0,))


@jax.jit
def update_with_donate(state, delta):
    """Return `state + delta` through the donating helper."""
    return _inner(state, delta)
