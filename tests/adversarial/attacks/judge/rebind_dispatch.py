"""A `remat_policy` whose two functions are left unjitted, and which rebinds the executor's own request
machinery (`course.engine.executor.asks._dispatch`) so that every call the judge asks for runs a jitted copy of them
instead. The judge reads what the executor reports and traces, so it sees jitted functions; the rebinding is
the grading machinery's, which the guard must hold from before any learner code runs.

Deserved: 0 of 9, the machinery was tampered with (unjitted, it earns 8 of 9: "jitted once" fails)."""

import jax
import jax.numpy as jnp
from jax import lax

from course.engine.executor import asks

_JITTED: dict[str, object] = {}
_DISPATCH = asks._dispatch


def _jitting(fn, header, args, kwargs, path, module):
    """The machinery's own dispatch, handed a jitted copy of the learner's function."""
    name = getattr(fn, "__name__", "")
    if name in ("loss_and_grads", "loss_and_grads_min_memory"):
        if name not in _JITTED:
            _JITTED[name] = jax.jit(fn)
        fn = _JITTED[name]
    return _DISPATCH(fn, header, args, kwargs, path, module)


asks._dispatch = _jitting


def _layer(x, p):
    """One residual block: x + gelu(x @ w1 + b1) @ w2."""
    return x + jax.nn.gelu(x @ p["w1"] + p["b1"]) @ p["w2"]


def _value_and_grad(policy):
    """value_and_grad of the mean square of the scanned layers, the scan's body checkpointed with `policy`."""
    step = jax.checkpoint(lambda h, p: (_layer(h, p), None), policy=policy)

    def loss(params, x):
        out, _ = lax.scan(step, x, params)
        return jnp.mean(out ** 2)

    return jax.value_and_grad(loss)


_keep_dots = _value_and_grad(jax.checkpoint_policies.dots_saveable)
_keep_inputs = _value_and_grad(jax.checkpoint_policies.nothing_saveable)


def loss_and_grads(params, x):
    """(loss, grads), saving per layer its input and its first matmul's output; not jitted."""
    return _keep_dots(params, x)


def loss_and_grads_min_memory(params, x):
    """(loss, grads), saving per layer only its input; not jitted."""
    return _keep_inputs(params, x)
