"""Exercise: `mixed_precision`. A file that shows one program when traced and runs another when called.

`train_step` is left unjitted (the mistake of `wrong/train_step_not_jitted.py`): called with real arrays, it
runs its operations one by one, each a small program of JAX's own, and while it does it puts back JAX's own
dispatch functions as they were at import, so that no recorder of the programs run sees them (as
`attacks/judge/hide_eager_programs.py` does). Traced (its leaves are `jax.core.Tracer`s, as when the grader
traces it for the programs it runs), it calls a jitted copy of itself, so that its trace holds one `jax.jit`
call.

Deserved: "train step jitted" fails (`test_train_step_jitted`): the calls the learner's code really makes
are not one compiled program, whatever their traces show.

Scored through `course check` when this file was added: 12 of 12, "passed" (without hiding its programs from the
recorder: 11 of 12, "train step jitted" fails).
"""

import jax
import jax.numpy as jnp
from jax._src import pjit, stages

# At import nothing records: these are JAX's own.
_ORIGINAL = {name: getattr(pjit, name) for name in ("_pjit_call_impl_python", "_get_fastpath_data")}
_CALL = stages.Compiled.__call__


def dense(x, w):
    """x @ w with both operands rounded to bfloat16 and the product kept in float32."""
    return jnp.dot(x.astype(jnp.bfloat16), w.astype(jnp.bfloat16), preferred_element_type=jnp.float32)


def loss_fn(params, batch):
    """The mean squared error of a two-layer tanh network whose matmuls run on bfloat16 operands."""
    h = jnp.tanh(dense(batch["x"], params["w1"]) + params["b1"])
    pred = dense(h, params["w2"]) + params["b2"]
    return jnp.mean((pred - batch["y"]) ** 2)


def _step(params, batch, lr):
    """One SGD step on the float32 master weights, and the loss before it."""
    loss, grads = jax.value_and_grad(loss_fn)(params, batch)
    return jax.tree.map(lambda p, g: p - lr * g, params, grads), loss


_jitted = jax.jit(_step)


def train_step(params, batch, lr):
    """A jit when traced; op by op when called, with whatever records the programs run taken out meanwhile."""
    if any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves((params, batch, lr))):
        return _jitted(params, batch, lr)
    put = {name: getattr(pjit, name) for name in _ORIGINAL}
    call = stages.Compiled.__call__
    try:
        for name, fn in _ORIGINAL.items():
            setattr(pjit, name, fn)
        stages.Compiled.__call__ = _CALL
        return jax.block_until_ready(_step(params, batch, lr))
    finally:
        for name, fn in put.items():
            setattr(pjit, name, fn)
        stages.Compiled.__call__ = call
