"""Reference solution of `sharded_donated_step`."""

import jax


def sharded_donated_step(x: jax.Array) -> jax.Array:
    """TODO(course new): what `sharded_donated_step` returns."""
    raise NotImplementedError("TODO(course new): write the reference solution")
