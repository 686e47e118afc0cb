"""A fori_loop over four separate accumulators in a tuple carry, gradients by argnums instead of a params dict."""

from functools import partial

import jax
import jax.numpy as jnp
from jax import lax


def model_loss(w1, b1, w2, x, y):
    return jnp.mean((jax.nn.gelu(x @ w1 + b1) @ w2 - y) ** 2)


grad_fn = jax.value_and_grad(model_loss, argnums=(0, 1, 2))


@partial(jax.jit, static_argnames="num_micro")
def accumulated_grads(params, batch, num_micro):
    n = batch["x"].shape[0] // num_micro
    w1, b1, w2 = params["w1"], params["b1"], params["w2"]

    def body(i, carry):
        x = lax.dynamic_slice_in_dim(batch["x"], i * n, n, axis=0)
        y = lax.dynamic_slice_in_dim(batch["y"], i * n, n, axis=0)
        loss, (g1, gb, g2) = grad_fn(w1, b1, w2, x, y)
        return (carry[0] + loss, carry[1] + g1, carry[2] + gb, carry[3] + g2)

    init = (0.0, jnp.zeros_like(w1), jnp.zeros_like(b1), jnp.zeros_like(w2))
    loss, g1, gb, g2 = lax.fori_loop(0, num_micro, body, init)
    return loss / num_micro, {"w1": g1 / num_micro, "b1": gb / num_micro, "w2": g2 / num_micro}
