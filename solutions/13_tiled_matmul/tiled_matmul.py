"""Reference solution of `tiled_matmul`."""

import jax


def tiled_matmul(x: jax.Array) -> jax.Array:
    """TODO(course new): what `tiled_matmul` returns."""
    raise NotImplementedError("TODO(course new): write the reference solution")
