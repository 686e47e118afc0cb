"""Reference solution of `shard_and_reduce`."""

import jax


def shard_and_reduce(x: jax.Array) -> jax.Array:
    """TODO(course new): what `shard_and_reduce` returns."""
    raise NotImplementedError("TODO(course new): write the reference solution")
