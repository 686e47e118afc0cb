"""Each microbatch's value and gradient scaled by 1/num_micro before it is added, the scan over an index range."""

from functools import partial

import jax
import jax.numpy as jnp


def loss_fn(p, x, y):
    h = jax.nn.gelu(jnp.einsum("bd,dh->bh", x, p["w1"]) + p["b1"])
    return jnp.mean((jnp.einsum("bh,h->b", h, p["w2"]) - y) ** 2)


@partial(jax.jit, static_argnames=["num_micro"])
def accumulated_grads(params, batch, num_micro):
    mb = batch["x"].shape[0] // num_micro
    vg = jax.value_and_grad(loss_fn)

    def step(acc, i):
        x = jax.lax.dynamic_slice(batch["x"], (i * mb, 0), (mb, batch["x"].shape[1]))
        y = jax.lax.dynamic_slice(batch["y"], (i * mb,), (mb,))
        loss, g = vg(params, x, y)
        return (acc[0] + loss / num_micro, jax.tree.map(lambda a, b: a + b / num_micro, acc[1], g)), None

    zero = (jnp.zeros([], jnp.float32), {k: jnp.zeros_like(v) for k, v in params.items()})
    return jax.lax.scan(step, zero, jnp.arange(num_micro))[0]
