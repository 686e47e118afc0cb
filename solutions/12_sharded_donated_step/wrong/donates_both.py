"""Donates params and grads; only one buffer per output can be reused, so JAX warns and keeps grads alive; must fail test_no_unusable_donation."""

import functools

import jax


@functools.partial(jax.jit, donate_argnums=(0, 1))
def sgd_step(params, grads, lr):
    """The update, offering both inputs' buffers."""
    return {k: params[k] - lr * grads[k] for k in params}
