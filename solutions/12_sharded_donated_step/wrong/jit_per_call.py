"""Builds a new jax.jit of a new lambda on every call, so every call compiles again; must fail test_no_compile_after_warmup."""

import jax


def sgd_step(params, grads, lr):
    """Jit and run the update."""
    step = jax.jit(lambda p, g, rate: {k: p[k] - rate * g[k] for k in p}, donate_argnums=0)
    return step(params, grads, lr)
