"""Leaves both functions unjitted, so each call traces and compiles its checkpointed scan again; must fail test_jitted_once."""

import jax
import jax.numpy as jnp
from jax import lax


def _layer(x: jax.Array, p: dict) -> jax.Array:
    """One residual block: x + gelu(x @ w1 + b1) @ w2."""
    return x + jax.nn.gelu(x @ p["w1"] + p["b1"]) @ p["w2"]


def _value_and_grad(policy):
    """value_and_grad of the mean square of the scanned layers, the scan's body checkpointed with `policy`."""
    step = jax.checkpoint(lambda h, p: (_layer(h, p), None), policy=policy)

    def loss(params: dict, x: jax.Array) -> jax.Array:
        out, _ = lax.scan(step, x, params)
        return jnp.mean(out ** 2)

    return jax.value_and_grad(loss)


# Keeps the (B, H) matmul output and the layer's input: gelu is recomputed from them, no matmul is.
_keep_dots = _value_and_grad(jax.checkpoint_policies.dots_saveable)
# Keeps only the layer's input: the backward pass recomputes x @ w1 and gelu.
_keep_inputs = _value_and_grad(jax.checkpoint_policies.nothing_saveable)


def loss_and_grads(params: dict, x: jax.Array) -> tuple[jax.Array, dict]:
    """(loss, grads), saving per layer its input and its first matmul's output."""
    return _keep_dots(params, x)


def loss_and_grads_min_memory(params: dict, x: jax.Array) -> tuple[jax.Array, dict]:
    """(loss, grads), saving per layer only its input."""
    return _keep_inputs(params, x)
