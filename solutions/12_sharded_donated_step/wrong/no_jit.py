"""Runs the update eagerly, with no jax.jit: nothing is compiled once and nothing is donated; must fail test_jit_built_once."""

import jax


def sgd_step(params, grads, lr):
    """The update, one eager operation per leaf."""
    return jax.tree.map(lambda p, g: p - lr * g, params, grads)
