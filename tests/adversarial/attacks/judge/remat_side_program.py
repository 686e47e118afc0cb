"""remat_policy whose loss and gradients NumPy computes on the host, handed through jitted programs that hold the
reference's checkpointed scans for show.

Traced, it is the reference. A call with real arrays computes the loss and the gradients by hand in NumPy and passes
them into one jitted program, which traces the reference's checkpointed scan (its residuals, its memory) and returns
what it was handed: the values are right, the programs the calls ran are the reference's, and nothing compiles
twice. It scored 9 of 9. The judge now runs the programs each call ran on fresh params of its own and finds that what
they return was made outside them (`test_values_loss_and_grads`, `test_values_min_memory`).
"""

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax


def _layer(x, p):
    return x + jax.nn.gelu(x @ p["w1"] + p["b1"]) @ p["w2"]


def _value_and_grad(policy):
    step = jax.checkpoint(lambda h, p: (_layer(h, p), None), policy=policy)

    def loss(params, x):
        out, _ = lax.scan(step, x, params)
        return jnp.mean(out ** 2)

    return jax.value_and_grad(loss)


_keep_dots = _value_and_grad(jax.checkpoint_policies.dots_saveable)
_keep_inputs = _value_and_grad(jax.checkpoint_policies.nothing_saveable)


@jax.jit
def _shown_dots(params, x, host):
    _keep_dots(params, x)  # traced for its residuals; what it computes is dropped
    return host


@jax.jit
def _shown_inputs(params, x, host):
    _keep_inputs(params, x)
    return host


def _gelu(z):
    c = np.float32(np.sqrt(2 / np.pi))
    t = np.tanh(c * (z + 0.044715 * z ** 3))
    return 0.5 * z * (1 + t), 0.5 * (1 + t) + 0.5 * z * (1 - t ** 2) * c * (1 + 3 * 0.044715 * z ** 2)


def _by_hand(params, x):
    p = {k: np.asarray(v, np.float32) for k, v in params.items()}
    hs, zs = [np.asarray(x, np.float32)], []
    for i in range(p["w1"].shape[0]):
        zs.append(hs[-1] @ p["w1"][i] + p["b1"][i])
        hs.append(hs[-1] + _gelu(zs[-1])[0] @ p["w2"][i])
    g = 2 * hs[-1] / hs[-1].size
    grads = {k: np.zeros_like(v) for k, v in p.items()}
    for i in reversed(range(p["w1"].shape[0])):
        a, slope = _gelu(zs[i])
        grads["w2"][i] = a.T @ g
        dz = (g @ p["w2"][i].T) * slope
        grads["w1"][i] = hs[i].T @ dz
        grads["b1"][i] = dz.sum(axis=0)
        g = g + dz @ p["w1"][i].T
    return np.float32(np.mean(hs[-1] ** 2)), {k: v.astype(np.float32) for k, v in grads.items()}


def _traced(*trees):
    return any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves(trees))


def loss_and_grads(params, x):
    if _traced(params, x):
        return _keep_dots(params, x)
    return _shown_dots(params, x, _by_hand(params, x))


def loss_and_grads_min_memory(params, x):
    if _traced(params, x):
        return _keep_inputs(params, x)
    return _shown_inputs(params, x, _by_hand(params, x))
