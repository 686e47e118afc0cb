"""Computes in float16 inside the helper, so no output can reuse the float32 `state` and donation is silently dropped; must fail test_helper_aliases_state."""

import jax
import jax.numpy as jnp

_add = jax.jit(
    lambda state, delta: state.astype(jnp.float16) + delta.astype(jnp.float16),
    donate_argnums=(0,),
)


def update_with_donate(state, delta):
    """Return `state + delta` computed in half precision, cast back to float32."""
    return _add(state, delta).astype(jnp.float32)
