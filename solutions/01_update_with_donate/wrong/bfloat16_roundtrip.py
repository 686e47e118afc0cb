"""Adds in bfloat16 inside the donating helper "to halve the traffic" and casts back to float32 after it: the values lose their low bits, and no bfloat16 output can take `state`'s float32 buffer; must fail test_values."""

import jax
import jax.numpy as jnp

_add_half = jax.jit(lambda s, d: s.astype(jnp.bfloat16) + d.astype(jnp.bfloat16), donate_argnums=(0,))


def update_with_donate(state, delta):
    """Return `state + delta`, summed in bfloat16."""
    return _add_half(state, delta).astype(jnp.float32)
