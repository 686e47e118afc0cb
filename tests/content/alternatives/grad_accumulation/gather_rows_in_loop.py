"""A fori_loop that picks each microbatch's rows with an index array (a gather inside the loop, one microbatch
at a time), and divides by `jax.nn.relu(num_micro)` (a custom derivative's call); jit by assignment. The judge
compiles its trace for the memory check, so a gather's dimension numbers and a custom_jvp call must cross."""

import jax
import jax.numpy as jnp


def _loss(params, x, y):
    pred = jax.nn.gelu(x @ params["w1"] + params["b1"]) @ params["w2"]
    return jnp.mean((pred - y) ** 2)


def _grads(params, batch, num_micro):
    rows = batch["x"].shape[0] // num_micro

    def body(m, carry):
        loss_sum, grad_sum = carry
        pick = m * rows + jnp.arange(rows)
        loss, grads = jax.value_and_grad(_loss)(params, batch["x"][pick], batch["y"][pick])
        return loss_sum + loss, jax.tree.map(jnp.add, grad_sum, grads)

    zero = (jnp.float32(0.0), jax.tree.map(jnp.zeros_like, params))
    loss_sum, grad_sum = jax.lax.fori_loop(0, num_micro, body, zero)
    scale = jax.nn.relu(jnp.float32(num_micro))  # a custom_jvp call in the trace, harmless: num_micro > 0
    return loss_sum / scale, jax.tree.map(lambda g: g / scale, grad_sum)


accumulated_grads = jax.jit(_grads, static_argnums=2)
