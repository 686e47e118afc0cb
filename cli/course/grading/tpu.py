"""Strict TPU interpretation: re-run a learner's `pallas_call`s under `pltpu.InterpretParams()`.

`interpret=True` forgives what a TPU refuses: indexing an `ANY`/HBM ref directly, a DMA never
waited on, a dynamic out-of-bounds read. The TPU interpreter simulates the memory spaces and
raises (or leaves NaN) instead. A grader wraps the learner's call in `tpu_interpret()`, which
swaps the interpreter in for every `pallas_call` made while it is active, whatever `interpret=`
the learner wrote.
"""

from __future__ import annotations

import contextlib
import functools
import types
from collections.abc import Callable, Iterator
from typing import Any

import jax

from course.grading.patching import replaced

__all__ = ["strict_params", "tpu_interpret", "run_strict"]


def strict_params(**overrides: Any) -> Any:
    """`pltpu.InterpretParams` with the strict defaults, changed only where a grader says so.

    Useful overrides: `detect_races=True`, `dma_execution_mode="eager"`,
    `uninitialized_memory="zero"`, `out_of_bounds_reads="uninitialized"`.
    """
    from jax.experimental.pallas import tpu as pltpu

    return pltpu.InterpretParams(**overrides)


@contextlib.contextmanager
def tpu_interpret(module: types.ModuleType | None = None, **overrides: Any) -> Iterator[Any]:
    """Within the block, every `pl.pallas_call` runs under the TPU interpreter; yields its params.

    Pass the learner's `module` too if it may have imported `pallas_call` by name. Traces cached
    from earlier calls would keep the old interpreter, so JAX's caches are cleared on entry.
    """
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import tpu as pltpu

    params = strict_params(**overrides)
    original = pl.pallas_call

    @functools.wraps(original)
    def strict_call(*args: Any, **kwargs: Any) -> Any:
        kwargs["interpret"] = params
        return original(*args, **kwargs)

    jax.clear_caches()
    try:
        with replaced(pl, "pallas_call", strict_call, *([vars(module)] if module else [])):
            yield params
    finally:
        # The simulator keeps global state; after an exception the docs ask for a reset.
        pltpu.reset_tpu_interpret_mode_state()
        jax.clear_caches()


def run_strict(fn: Callable[..., Any], *args: Any, module: types.ModuleType | None = None,
               **overrides: Any) -> Any:
    """Call `fn(*args)` with every `pallas_call` under the TPU interpreter and wait for the result."""
    with tpu_interpret(module, **overrides):
        return jax.block_until_ready(fn(*args))
