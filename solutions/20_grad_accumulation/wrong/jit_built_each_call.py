"""Builds a new jit of a module-level function on every call: nothing recompiles, but the jit is not built once at module scope; must fail test_compiles_once."""

import functools

import jax
import jax.numpy as jnp
from jax import lax


def _loss(params: dict, x: jax.Array, y: jax.Array) -> jax.Array:
    """The mean squared error of one (micro)batch."""
    pred = jax.nn.gelu(x @ params["w1"] + params["b1"]) @ params["w2"]
    return jnp.mean((pred - y) ** 2)


def accumulated_grads(params: dict, batch: dict, num_micro: int) -> tuple[jax.Array, dict]:
    """The jitted accumulation, its jit built on every call."""
    return functools.partial(jax.jit, static_argnames="num_micro")(_accumulate)(params, batch, num_micro)


def _accumulate(params: dict, batch: dict, num_micro: int) -> tuple[jax.Array, dict]:
    """Sum value_and_grad over microbatches of consecutive rows, then divide once by their number."""
    # (B, ...) -> (num_micro, B // num_micro, ...): microbatch m holds rows m*b .. (m+1)*b - 1.
    micro = jax.tree.map(lambda a: a.reshape(num_micro, -1, *a.shape[1:]), batch)

    def step(carry, mb):
        loss_sum, grad_sum = carry
        loss, grads = jax.value_and_grad(_loss)(params, mb["x"], mb["y"])
        return (loss_sum + loss, jax.tree.map(jnp.add, grad_sum, grads)), None

    zeros = (jnp.zeros((), jnp.float32), jax.tree.map(lambda p: jnp.zeros_like(p, jnp.float32), params))
    (loss_sum, grad_sum), _ = lax.scan(step, zeros, micro)
    return loss_sum / num_micro, jax.tree.map(lambda g: g / num_micro, grad_sum)
