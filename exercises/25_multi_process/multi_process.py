"""Exercise `multi_process`: one program, two processes; each loads its own rows, and they reduce them together.

Run `course show multi_process` for the lesson, and `course check` to grade this file. The grader starts
2 processes, each with 2 CPU devices, and joins them with `jax.distributed.initialize` before it imports
this file: do not call it yourself.
"""

from collections.abc import Callable

import jax
import numpy as np


def load_shard(read_rows: Callable[[int, int], np.ndarray], num_rows: int, process_index: int,
               process_count: int) -> np.ndarray:
    """This process's rows of a `num_rows`-row dataset, read through `read_rows(start, stop)`.

    Process i of p owns the contiguous rows [i * num_rows // p, (i + 1) * num_rows // p); read those and
    no others.
    """
    # TODO: ask read_rows for this process's block only.
    raise NotImplementedError("load_shard is not written yet")


def global_batch(local_rows: np.ndarray, mesh: jax.sharding.Mesh) -> jax.Array:
    """One (num_rows, F) array sharded P('data') over every device of `mesh`, from this process's rows."""
    # TODO: a global array, built from what each process holds.
    raise NotImplementedError("global_batch is not written yet")


def global_mean(x: jax.Array) -> jax.Array:
    """The (F,) mean over every row of the global array `x`, replicated on every device."""
    # TODO: a mean every process computes, together.
    raise NotImplementedError("global_mean is not written yet")
