"""Exercise `fsdp_step`: the loss and gradients of a two-layer MLP whose parameters live sharded (FSDP).

Run `course show fsdp_step` for the lesson, and `course check` to grade this file. To try it yourself,
get 8 CPU devices first: `jax.config.update("jax_num_cpu_devices", 8)` right after `import jax`.
"""

import jax


def shard_params(params: dict, mesh: jax.sharding.Mesh) -> dict:
    """Every leaf of `params` placed on `mesh`, sharded P('fsdp') on its leading axis."""
    # TODO: place each leaf with a NamedSharding.
    raise NotImplementedError("shard_params is not written yet")


def loss_and_grads(params: dict, batch: tuple, mesh: jax.sharding.Mesh) -> tuple:
    """(mean squared error of the MLP on `batch`, its gradients with respect to `params`), all sharded P('fsdp').

    `params` is {'w1': (D, H), 'b1': (H,), 'w2': (H, O), 'b2': (O,)} and `batch` is (x (B, D), y (B, O)),
    every array sharded P('fsdp') on the 1-D mesh of 8 devices. `h = relu(x @ w1 + b1)`,
    `out = h @ w2 + b2`, `loss = mean((out - y) ** 2)` over all B * O elements. Must work under `jax.jit`.
    """
    # TODO: gather each weight whole for its layer, keep the batch sharded, and let the gradients
    #       come back sharded like the params.
    raise NotImplementedError("loss_and_grads is not written yet")
