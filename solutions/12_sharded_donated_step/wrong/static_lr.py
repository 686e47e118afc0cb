"""Marks lr static, so every new learning rate is a new cache key and compiles again; must fail test_no_compile_after_warmup."""

import functools

import jax


@functools.partial(jax.jit, donate_argnums=0, static_argnums=2)
def sgd_step(params, grads, lr):
    """The update, with lr baked into the program."""
    return {k: params[k] - lr * grads[k] for k in params}
