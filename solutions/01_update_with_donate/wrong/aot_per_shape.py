"""Calls ahead-of-time programs kept per shape, which take only concrete arrays, so the function cannot be traced as the task requires; must fail test_helper_aliases_state."""

import jax

_programs = {}  # one `.lower(...).compile()` program per shape and dtype


def update_with_donate(state, delta):
    """Compile a donating program for this shape the first time, then run it."""
    key = (state.shape, state.dtype)
    if key not in _programs:
        _programs[key] = jax.jit(lambda s, d: s + d, donate_argnums=0).lower(state, delta).compile()
    return _programs[key](state, delta)
