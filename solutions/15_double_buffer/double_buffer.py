"""Reference solution of `double_buffer`."""

import jax


def double_buffer(x: jax.Array) -> jax.Array:
    """TODO(course new): what `double_buffer` returns."""
    raise NotImplementedError("TODO(course new): write the reference solution")
