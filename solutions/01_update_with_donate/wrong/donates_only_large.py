"""Donates only when the state is large ("donation only pays for big arrays"), so a short `state` is never consumed; must fail test_state_consumed."""

import jax

_plain = jax.jit(lambda s, d: s + d)
_donating = jax.jit(lambda s, d: s + d, donate_argnums=0)


def update_with_donate(state, delta):
    """Donate big states, copy small ones."""
    if state.size >= 256:
        return _donating(state, delta)
    return _plain(state, delta)
