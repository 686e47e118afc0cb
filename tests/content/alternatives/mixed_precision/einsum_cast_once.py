"""`jnp.einsum` with preferred_element_type, grads by `jax.grad(has_aux=True)`, the step jitted by assignment."""

import jax
import jax.numpy as jnp

bf16 = jnp.bfloat16


def dense(x, w):
    """einsum on bfloat16 operands into float32."""
    return jnp.einsum("bk,kn->bn", x.astype(bf16), w.astype(bf16), preferred_element_type=jnp.float32)


def loss_fn(params, batch):
    """Both layers through dense."""
    hidden = jnp.tanh(dense(batch["x"], params["w1"]) + params["b1"])
    err = dense(hidden, params["w2"]) + params["b2"] - batch["y"]
    return jnp.mean(jnp.square(err))


def _loss_aux(params, batch):
    """The loss twice: once to differentiate, once as the reported value."""
    loss = loss_fn(params, batch)
    return loss, loss


def _train_step(params, batch, lr):
    """SGD with a dict comprehension."""
    grads, loss = jax.grad(_loss_aux, has_aux=True)(params, batch)
    return {k: params[k] - lr * grads[k] for k in params}, loss


train_step = jax.jit(_train_step)
