"""Exercise: `sharded_donated_step`. A file that shows one program when traced and runs another when called.

Traced (its leaves are `jax.core.Tracer`s), it calls a jit that donates `params`; called with real arrays, it
calls a jit that donates nothing, and deletes every leaf of `params` by hand afterwards, so that `params`
look consumed (the mistake of `wrong/deletes_params.py`).

Deserved: "params consumed" and "alias bytes" fail (`test_params_consumed`, `test_alias_bytes`): the calls
the learner's code really makes reuse no buffer, whatever their traces show.

Scored through `course check` when this file was added: 11 of 11, "passed".
"""

import functools

import jax


@functools.partial(jax.jit, donate_argnums=0)
def _donating(params, grads, lr):
    """The SGD update, donating params."""
    return {k: params[k] - lr * grads[k] for k in params}


@jax.jit
def _plain(params, grads, lr):
    """The SGD update, donating nothing."""
    return {k: params[k] - lr * grads[k] for k in params}


def sgd_step(params, grads, lr):
    """The donating program when traced; when called, a plain one, and `params` deleted by hand."""
    if any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves((params, grads, lr))):
        return _donating(params, grads, lr)
    out = _plain(params, grads, lr)
    for leaf in params.values():
        leaf.delete()
    return out
