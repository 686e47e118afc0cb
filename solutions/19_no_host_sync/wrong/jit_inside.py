"""Builds the jitted step inside train, so every call of train compiles it again; must fail test_compiles_once."""

import time

import jax
import jax.numpy as jnp


def _loss(params, x, y):
    """The mean squared error of one batch."""
    return jnp.mean((x @ params["w"] + params["b"] - y) ** 2)


@jax.jit
def _step(params, x, y, lr):
    """One SGD step and the loss before it."""
    loss, grads = jax.value_and_grad(_loss)(params, x, y)
    return jax.tree.map(lambda p, g: p - lr * g, params, grads), loss


def train(params, batches, lr):
    """A new jax.jit of a new lambda per call."""
    step = jax.jit(lambda p, x, y: jax.tree.map(lambda a, g: a - lr * g, p, jax.grad(_loss)(p, x, y)))
    losses = []
    for i in range(batches["x"].shape[0]):
        losses.append(_loss(params, batches["x"][i], batches["y"][i]))
        params = step(params, batches["x"][i], batches["y"][i])
    return params, jnp.stack(losses)


def time_step(step_fn, *args, n_iter=5, clock=time.perf_counter):
    """Warm up and wait, then time n_iter calls up to their results."""
    jax.block_until_ready(step_fn(*args))
    start = clock()
    for _ in range(n_iter):
        out = step_fn(*args)
    jax.block_until_ready(out)
    return (clock() - start) / n_iter
