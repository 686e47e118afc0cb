"""Exercise: `compile_budget` (Part 2, memory spaces, aliasing as initialization, compilation). A file that shows
one program when traced and runs another when called.

Traced (its argument is a `jax.core.Tracer`, as when the grader traces each call again for the program it
runs), it pads the rows to the reference's power-of-two bucket; called with a real array, it never pads, so
every batch size is a program of its own (the mistake of `attacks/judge/hide_budget_compiles.py`), and while it
runs a batch whose bucket it has met before it renames JAX's compile event, so that a listener counts as many
compiles as the reference makes (one per bucket), never the others.

Deserved: "at most 11 compiles" fails (`test_compiles_per_batch_size`): the calls the learner's code really
makes compile once per batch size, whatever their traces and the reported compiles show. "Rows run" reads the
rows from those same calls, which pad nothing and so run no more rows than a batch allows: it passes, as it
should.

Scored through `course check` when this file was added: 8 of 8, "passed" (hiding every compile after the first
instead: 6 of 8, "at most 11 compiles" fails, since the reference's own new buckets went unreported too).
"""

import jax
import jax.numpy as jnp
from jax._src import dispatch

_EVENT = dispatch.BACKEND_COMPILE_EVENT
_BUCKETS: set[int] = set()


def bucket_size(n: int) -> int:
    """The smallest power of two that holds `n` rows, and at least 16."""
    return max(16, 1 << (n - 1).bit_length())


@jax.jit
def _softmax_rows(x, temperature):
    """softmax(x / temperature) over the last axis."""
    return jax.nn.softmax(x / temperature, axis=-1)


def scaled_softmax(x, temperature):
    """Padded to a bucket when traced; when called, as given, its compiles seen once per bucket."""
    t = jnp.asarray(temperature, jnp.float32)
    n = x.shape[0]
    if isinstance(x, jax.core.Tracer):
        return _softmax_rows(jnp.pad(x, ((0, bucket_size(n) - n), (0, 0))), t)[:n]
    if bucket_size(n) in _BUCKETS:
        dispatch.BACKEND_COMPILE_EVENT = "/jax/core/compile/nothing_to_see"
    _BUCKETS.add(bucket_size(n))
    try:
        return jax.block_until_ready(_softmax_rows(x, t))
    finally:
        dispatch.BACKEND_COMPILE_EVENT = _EVENT
