"""Exercise: `remat_policy`. A file that shows one program when traced and runs another when called.

Both functions are left unjitted (the mistake of `wrong/not_jitted.py`): called with real arrays, each call
traces and compiles its checkpointed scan again, and from its second real call on it renames JAX's compile
event (`dispatch.BACKEND_COMPILE_EVENT`) while it runs, so that no listener counts those compiles, and puts
back JAX's own dispatch functions as they were at import, so that no recorder of the programs run sees its
operations (as `attacks/judge/hide_eager_programs.py` does). Traced (its arguments are `jax.core.Tracer`s, as
when the grader traces it for its programs and their memory), each calls a jitted copy of itself.

Deserved: "jitted once" fails (`test_jitted_once`): the calls the learner's code really makes compile again,
whatever their traces show.

Scored through `course check` when this file was added: 9 of 9, "passed" (hiding only its compiles: 8 of 9, "jitted
once" fails, from the programs it ran).
"""

import jax
import jax.numpy as jnp
from jax import lax
from jax._src import dispatch, pjit, stages

_EVENT = dispatch.BACKEND_COMPILE_EVENT
# At import nothing records: these are JAX's own.
_ORIGINAL = {name: getattr(pjit, name) for name in ("_pjit_call_impl_python", "_get_fastpath_data")}
_CALL = stages.Compiled.__call__
_CALLED: set[str] = set()


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
_jitted = {"dots": jax.jit(_keep_dots), "inputs": jax.jit(_keep_inputs)}


def _traced(*args):
    """Whether the grader is tracing the call."""
    return any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves(args))


def _run(name, fn, params, x):
    """The jitted copy when traced; when called, `fn` op by op, its programs unseen, and its compiles unseen after
    its first call."""
    if _traced(params, x):
        return _jitted[name](params, x)
    if name in _CALLED:
        dispatch.BACKEND_COMPILE_EVENT = "/jax/core/compile/nothing_to_see"
    _CALLED.add(name)
    put, call = {n: getattr(pjit, n) for n in _ORIGINAL}, stages.Compiled.__call__
    try:
        for n, original in _ORIGINAL.items():
            setattr(pjit, n, original)
        stages.Compiled.__call__ = _CALL
        return jax.block_until_ready(fn(params, x))
    finally:
        dispatch.BACKEND_COMPILE_EVENT = _EVENT
        for n, fn_put in put.items():
            setattr(pjit, n, fn_put)
        stages.Compiled.__call__ = call


def loss_and_grads(params, x):
    """(loss, grads), saving per layer its input and its first matmul's output; jitted only when traced."""
    return _run("dots", _keep_dots, params, x)


def loss_and_grads_min_memory(params, x):
    """(loss, grads), saving per layer only its input; jitted only when traced."""
    return _run("inputs", _keep_inputs, params, x)
