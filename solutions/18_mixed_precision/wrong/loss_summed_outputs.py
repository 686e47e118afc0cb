"""Sums the squared errors over the 8 outputs of each row and averages over rows only, a loss 8 times the mean; must fail test_loss_values."""

import jax
import jax.numpy as jnp


def dense(x, w):
    return jnp.matmul(x.astype(jnp.bfloat16), w.astype(jnp.bfloat16), preferred_element_type=jnp.float32)


def loss_fn(params, batch):
    h = jnp.tanh(dense(batch["x"], params["w1"]) + params["b1"])
    err = dense(h, params["w2"]) + params["b2"] - batch["y"]
    return jnp.mean(jnp.sum(err * err, axis=-1))


@jax.jit
def train_step(params, batch, lr):
    loss, grads = jax.value_and_grad(loss_fn)(params, batch)
    new = {k: params[k] - lr * grads[k] for k in params}
    return new, loss
