"""An update that ends its own process when it is called."""

import os

import jax


def update_with_donate(state: jax.Array, delta: jax.Array) -> jax.Array:
    """Never returns."""
    os._exit(0)
