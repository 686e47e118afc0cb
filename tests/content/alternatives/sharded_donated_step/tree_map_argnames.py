"""A correct `sharded_donated_step` in the JAX docs' style: `jax.tree.map` over both trees and the
donation asked by name, `donate_argnames="params"`, on a decorator."""

from functools import partial

import jax


@partial(jax.jit, donate_argnames="params")
def sgd_step(params, grads, lr):
    """The new parameters, leaf by leaf."""
    return jax.tree.map(lambda p, g: p - lr * g, params, grads)
