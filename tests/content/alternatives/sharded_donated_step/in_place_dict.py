"""A correct `sharded_donated_step` that updates the dict it is given, key by key, inside the jit
(the dict is the jit's own copy of the tree, so the caller's dict is not touched), jitted by an
assignment with `donate_argnums=[0]`."""

import jax


def _step(params, grads, lr):
    for key, grad in grads.items():
        params[key] = params[key] - lr * grad
    return params


sgd_step = jax.jit(_step, donate_argnums=[0])
