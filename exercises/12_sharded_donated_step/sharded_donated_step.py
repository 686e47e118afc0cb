"""Exercise `sharded_donated_step`: one SGD step over sharded parameters that reuses their buffers.

Run `course show sharded_donated_step` for the lesson, and `course check` to grade this file. To try it
yourself, get 8 CPU devices first: `jax.config.update("jax_num_cpu_devices", 8)` right after `import jax`.
"""

import jax


# TODO: make `sgd_step` a jax.jit built once, here at module scope, that donates `params`
#       (a decorator, or a module-level jit that `sgd_step` calls with the same arguments).
def sgd_step(params: dict, grads: dict, lr: float) -> dict:
    """`{k: params[k] - lr * grads[k]}` over dicts of float32 arrays of equal structure and sharding.

    `lr` is a Python float and stays traced. After the call, every leaf of `params` is consumed;
    `grads` is untouched.
    """
    # TODO: the update, leaf by leaf.
    raise NotImplementedError("sgd_step is not written yet")
