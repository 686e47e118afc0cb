"""Donates grads instead of params, so the caller loses its gradients and the old params stay allocated; must fail test_grads_not_donated."""

import functools

import jax


@functools.partial(jax.jit, donate_argnums=1)
def sgd_step(params, grads, lr):
    """The update, written over the gradients."""
    return {k: params[k] - lr * grads[k] for k in params}
