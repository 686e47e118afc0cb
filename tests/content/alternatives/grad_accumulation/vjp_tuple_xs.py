"""grad_accumulation written apart from the reference: `jax.vjp` pulled back from 1.0 inside a scan whose
xs are the (x, y) microbatches as a tuple, the float32 sums carried as a flat list of leaves."""

from functools import partial

import jax
import jax.numpy as jnp
from jax import lax


def _loss(params, x, y):
    """Mean squared error of the gelu MLP on one microbatch."""
    return jnp.mean(jnp.square(jax.nn.gelu(x @ params["w1"] + params["b1"]) @ params["w2"] - y))


@partial(jax.jit, static_argnames=("num_micro",))
def accumulated_grads(params, batch, num_micro):
    """The full batch's loss and gradients as the mean over num_micro microbatches."""
    leaves, tree = jax.tree.flatten(params)
    xs = (batch["x"].reshape(num_micro, -1, batch["x"].shape[1]), batch["y"].reshape(num_micro, -1))

    def step(carry, micro):
        loss, pullback = jax.vjp(lambda p: _loss(p, *micro), params)
        (grads,) = pullback(jnp.ones((), loss.dtype))
        return [c + g for c, g in zip(carry, [loss, *jax.tree.leaves(grads)], strict=True)], None

    start = [jnp.zeros((), jnp.float32)] + [jnp.zeros(leaf.shape, jnp.float32) for leaf in leaves]
    (total, *sums), _ = lax.scan(step, start, xs)
    return total / num_micro, jax.tree.unflatten(tree, [s / num_micro for s in sums])
