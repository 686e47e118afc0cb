"""mixed_precision written apart from the reference: the step makes one bfloat16 compute copy of the
weight matrices (biases untouched) and differentiates through it to the float32 masters; `jnp.matmul`."""

import jax
import jax.numpy as jnp


def dense(x, w):
    """x @ w on bfloat16 operands (a no-op cast when w is bfloat16 already), float32 out."""
    return jnp.matmul(x.astype(jnp.bfloat16), w.astype(jnp.bfloat16), preferred_element_type=jnp.float32)


def loss_fn(params, batch):
    """Mean squared error of the two-layer tanh network."""
    hidden = jnp.tanh(dense(batch["x"], params["w1"]) + params["b1"])
    return jnp.mean(jnp.square(dense(hidden, params["w2"]) + params["b2"] - batch["y"]))


def _compute_copy(params):
    """The weight matrices as bfloat16, the biases as they are: what the matmuls would read anyway."""
    return {k: v.astype(jnp.bfloat16) if v.ndim == 2 else v for k, v in params.items()}


def _step(params, batch, lr):
    """SGD on the float32 masters; the gradient flows back through the bfloat16 copies."""
    loss, grads = jax.value_and_grad(lambda p: loss_fn(_compute_copy(p), batch))(params)
    return jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads), loss


train_step = jax.jit(_step)
