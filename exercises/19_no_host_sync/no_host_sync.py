"""Exercise `no_host_sync`: a training loop that never waits for the device, and a timer that waits where it must.

Run `course show no_host_sync` for the lesson, and `course check` to grade this file.
"""

import time

import jax
import jax.numpy as jnp

# params = {"w": (D,), "b": ()} float32; batches = {"x": (S, B, D), "y": (S, B)} float32.
# The loss of one batch: mean((x @ w + b - y) ** 2)


def train(params: dict, batches: dict, lr: float) -> tuple[dict, jax.Array]:
    """One SGD step per batch; returns (params, losses), losses float32 (S,) with each loss taken before its update.

    Returns jax.Arrays without reading any value to the host or waiting for the device.
    """
    # TODO: dispatch one jitted step per batch (or one scan over all of them); read nothing back.
    raise NotImplementedError("train is not written yet")


def time_step(step_fn, *args, n_iter: int = 5, clock=time.perf_counter) -> float:
    """Seconds per call of step_fn(*args), measured with `clock` over n_iter calls.

    Warm up with one call and wait for it before the clock starts; stop the clock only once the results are ready.
    """
    # TODO: warm up and wait, read clock(), make n_iter calls, wait for their results, read clock() again.
    raise NotImplementedError("time_step is not written yet")
