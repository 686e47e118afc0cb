"""A correct `sgd_step` assigned from `jax.jit` of a lambda, with `jax.tree_util.tree_map` and `jnp.subtract`."""

import jax
import jax.numpy as jnp
from jax.tree_util import tree_map

sgd_step = jax.jit(
    lambda params, grads, lr: tree_map(lambda w, dw: jnp.subtract(w, jnp.multiply(lr, dw)), params, grads),
    donate_argnums=(0,),
)
