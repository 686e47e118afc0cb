"""Takes value_and_grad of the whole batch at once and ignores num_micro, so the whole batch's activations are alive together; must fail test_loop_over_microbatches."""

import functools

import jax
import jax.numpy as jnp


def _loss(params, x, y):
    """The mean squared error of the batch."""
    return jnp.mean((jax.nn.gelu(x @ params["w1"] + params["b1"]) @ params["w2"] - y) ** 2)


@functools.partial(jax.jit, static_argnames="num_micro")
def accumulated_grads(params, batch, num_micro):
    """No microbatches at all."""
    return jax.value_and_grad(_loss)(params, batch["x"], batch["y"])
