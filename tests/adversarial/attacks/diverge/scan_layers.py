"""Exercise: `scan_layers`. A file that shows one program when traced and runs another when called.

`forward` is left unjitted (the mistake of `wrong/no_jit.py`): called with real arrays, it runs its scan op by
op, and while it does it renames JAX's compile event (`dispatch.BACKEND_COMPILE_EVENT`) so that no listener
counts what those calls compile, then puts the name back. Traced (its arguments are `jax.core.Tracer`s, as
when the grader traces it for its programs), it calls a jitted copy of itself.

Deserved: "compiles once" fails (`test_compiles_once`): the calls the learner's code really makes are not one
compiled program, whatever their traces and the reported compiles show.

Scored through `course check` when this file was added: 9 of 9, "passed".
"""

import jax
import jax.numpy as jnp
from jax import lax
from jax._src import dispatch

_EVENT = dispatch.BACKEND_COMPILE_EVENT


def stack_layers(layers):
    """Stack every parameter of the L layers on a new leading axis: w (L, D, D), b (L, D)."""
    return jax.tree.map(lambda *leaves: jnp.stack(leaves), *layers)


def _layer(x, params):
    """One step of the scan: the layer whose parameters the scan sliced out, applied to the carry."""
    return jnp.tanh(x @ params["w"] + params["b"]), None


def _forward(stacked, x):
    """The L layers in order, in one scan."""
    out, _ = lax.scan(_layer, x, stacked)
    return out


_jitted = jax.jit(_forward)


def forward(stacked, x):
    """A jit when traced; when called, op by op, with the compile event renamed while it runs."""
    if any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves((stacked, x))):
        return _jitted(stacked, x)
    dispatch.BACKEND_COMPILE_EVENT = "/jax/core/compile/nothing_to_see"
    try:
        return jax.block_until_ready(_forward(stacked, x))
    finally:
        dispatch.BACKEND_COMPILE_EVENT = _EVENT
