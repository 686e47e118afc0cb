"""A small precision-policy object (compute and param dtypes), held by a trainer whose jitted step is a method."""

from dataclasses import dataclass

import jax
import jax.numpy as jnp


@dataclass(frozen=True)
class Policy:
    """What the matmuls compute in and what they return."""

    compute: object = jnp.bfloat16
    output: object = jnp.float32

    def matmul(self, a, b):
        """a @ b on `compute` operands, `output` result."""
        return jnp.matmul(a.astype(self.compute), b.astype(self.compute), preferred_element_type=self.output)


POLICY = Policy()


def dense(x, w):
    """The policy's matmul."""
    return POLICY.matmul(x, w)


def loss_fn(params, batch):
    """The two layers, everything but the matmul operands in float32."""
    pre = dense(batch["x"], params["w1"]) + params["b1"][None, :]
    out = dense(jnp.tanh(pre), params["w2"]) + params["b2"][None, :]
    return ((out - batch["y"]) ** 2).mean()


class Trainer:
    """Holds the jitted step."""

    def __init__(self):
        """Build the jit once."""
        self.step = jax.jit(self._step)

    @staticmethod
    def _step(params, batch, lr):
        """value_and_grad, then a tree_map update in float32."""
        loss, grads = jax.value_and_grad(loss_fn)(params, batch)
        new = jax.tree_util.tree_map(lambda p, g: (p - jnp.float32(lr) * g).astype(jnp.float32), params, grads)
        return new, loss


_TRAINER = Trainer()


def train_step(params, batch, lr):
    """Delegates to the trainer's jitted step."""
    return _TRAINER.step(params, batch, lr)
