"""A donating jitted step driven by a Python loop over indices; per-call timings with the median."""

import statistics
import time
from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.jit, donate_argnums=0)
def _step(params, x, y, lr):
    """SGD on a donated params pytree."""
    def loss_fn(p):
        err = jnp.dot(x, p["w"]) + p["b"] - y
        return jnp.mean(err * err)

    loss, g = jax.value_and_grad(loss_fn)(params)
    return jax.tree_util.tree_map(lambda a, b: a - lr * b, params, g), loss


def train(params, batches, lr):
    """Copies params once (the caller keeps its own), then steps through the batches."""
    params = jax.tree_util.tree_map(jnp.copy, params)
    xs, ys = batches["x"], batches["y"]
    losses = [None] * xs.shape[0]
    for i in range(xs.shape[0]):
        params, losses[i] = _step(params, xs[i], ys[i], lr)
    return params, jnp.array(losses)


def time_step(step_fn, *args, n_iter=5, clock=time.perf_counter):
    """Times each call on its own, waiting for each result, and returns the median."""
    jax.block_until_ready(step_fn(*args))  # the step may return a pytree: wait for every leaf
    samples = []
    for _ in range(n_iter):
        start = clock()
        jax.block_until_ready(step_fn(*args))
        samples.append(clock() - start)
    return float(statistics.median(samples))
