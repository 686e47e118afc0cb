"""Exercise `pipeline_stages`: a GPipe forward pass, one layer per device, microbatches passed stage to stage.

Run `course show pipeline_stages` for the lesson, and `course check` to grade this file. To try it
yourself, get 8 CPU devices first: `jax.config.update("jax_num_cpu_devices", 8)` right after `import jax`.
"""

import jax


def pipeline(x: jax.Array, weights: jax.Array, mesh: jax.sharding.Mesh) -> jax.Array:
    """`out[m] = tanh(... tanh(x[m] @ W0) ... @ W_{S-1})` for every microbatch m, (M, B, D), replicated.

    `mesh` is 1-D with S devices on the axis 'stage'. `x` (M, B, D) is replicated (P()); `weights` (S, D, D) is
    sharded P('stage'), so device s holds layer s. Must work under `jax.jit`.
    """
    # TODO: M + S - 1 steps; at each, stage 0 takes the next microbatch, every stage applies its layer,
    # and the activations move one stage right. Collect what the last stage finishes.
    raise NotImplementedError("pipeline is not written yet")
