"""Makes a new optimizer object on every call, whose constructor builds the donating jit, so every call builds and compiles again; must fail test_jit_built_once."""

import jax


class SGD:
    """An optimizer holding its jitted update."""

    def __init__(self, lr):
        self.lr = lr
        self._update = jax.jit(self._apply, donate_argnums=0)

    @staticmethod
    def _apply(params, grads, lr):
        return {k: params[k] - lr * grads[k] for k in params}

    def step(self, params, grads):
        return self._update(params, grads, self.lr)


def sgd_step(params, grads, lr):
    """One step of a fresh optimizer."""
    return SGD(lr).step(params, grads)
