"""Jits the step without donate_argnums, so every call allocates new params next to the old ones; must fail test_params_consumed."""

import jax


@jax.jit
def sgd_step(params, grads, lr):
    """The update, into fresh buffers."""
    return {k: params[k] - lr * grads[k] for k in params}
