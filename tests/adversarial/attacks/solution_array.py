import jax


def double_array(x: jax.Array) -> jax.Array:
    """Return twice x."""
    return 2 * x
