"""Strict TPU interpretation: run a learner's `pallas_call`s under `pltpu.InterpretParams()`.

`interpret=True` forgives what a TPU refuses: indexing an `ANY`/HBM ref directly, a DMA never
waited on, a dynamic out-of-bounds read. The TPU interpreter simulates the memory spaces and
raises (or leaves NaN) instead. A grader wraps the learner's call in `tpu_interpret()`, which
uses `pltpu.force_tpu_interpret_mode`: every `pallas_call` traced inside the block runs under the
strict interpreter, whatever `interpret=` the learner wrote (even an `InterpretParams` of their
own, or a `functools.partial(pl.pallas_call, ...)` made at import). The mode is part of JAX's
jit cache key, so the learner's module-level jits trace afresh inside the block, and their
earlier traces are used again after it.

Where JAX has no TPU, a grading makes the strict interpreter every `pallas_call`'s default before the
learner's file is imported (`strict_by_default`), so a file that passes no `interpret=` at all, the same
file that compiles on a TPU, runs here as it would under `tpu_interpret()`.
"""

from __future__ import annotations

import contextlib
import types
from collections.abc import Callable, Iterator
from typing import Any

import jax

from course.grading.observe.calls.silent_waits import watching_waits

__all__ = ["interpreter_failure", "strict_by_default", "strict_params", "tpu_interpret", "run_strict"]

_OPEN: list[dict[str, Any]] = []
"""The overrides of each `tpu_interpret` block now open, innermost last."""


def strict_params(**overrides: Any) -> Any:
    """`pltpu.InterpretParams` with the strict defaults, changed only where a grader says so.

    Useful overrides: `detect_races=True`, `dma_execution_mode="eager"`,
    `uninitialized_memory="zero"`, `out_of_bounds_reads="uninitialized"`.
    """
    from jax.experimental.pallas import tpu as pltpu

    return pltpu.InterpretParams(**overrides)


def strict_by_default() -> bool:
    """Where JAX has no TPU, run every `pallas_call` under the strict interpreter from now on; True if so.

    JAX lets a global mode override whatever `interpret=` a call was given (`pltpu.set_tpu_interpret_mode`),
    and a `tpu_interpret` block still overrides the mode within it. On a TPU nothing changes: kernels compile.
    """
    from jax.experimental.pallas import tpu as pltpu

    if _has_tpu():
        return False
    pltpu.set_tpu_interpret_mode(strict_params())
    return True


def _has_tpu() -> bool:
    """Whether JAX runs on a TPU here; told by `JAX_PLATFORMS` when it names none (a grading's `cpu`), so that
    JAX's backend is not started before the learner's file runs, and by the backend itself otherwise."""
    platforms = [p.strip() for p in (jax.config.jax_platforms or "").lower().split(",") if p.strip()]
    if platforms and "tpu" not in platforms:
        return False
    return jax.default_backend() == "tpu"


@contextlib.contextmanager
def tpu_interpret(module: types.ModuleType | None = None, **overrides: Any) -> Iterator[Any]:
    """Within the block, every `pallas_call` runs under the TPU interpreter; yields its params.

    `module` (the learner's) is accepted for older graders and no longer needed: the mode is
    forced inside JAX, so a `pallas_call` imported by name or captured in a `functools.partial`
    is reached too. A one-core `.wait()` that nothing will signal raises `SilentWait` at once
    (`course.grading.observe.calls.silent_waits`) instead of sleeping until the wall cap. If the block raises,
    the simulator's global state is reset, as JAX's docs ask, so the next kernel starts clean.
    """
    from jax.experimental.pallas import tpu as pltpu

    del module  # forcing the mode inside JAX reaches every spelling of `pallas_call`
    params = strict_params(**overrides)
    _OPEN.append(dict(overrides))
    try:
        with pltpu.force_tpu_interpret_mode(params), watching_waits():
            yield params
    except BaseException:
        pltpu.reset_tpu_interpret_mode_state()
        raise
    finally:
        _OPEN.pop()


def active_overrides() -> dict[str, Any] | None:
    """The overrides of the innermost open `tpu_interpret` block, or None outside one.

    A split grading's judge runs no kernel itself: a call it makes inside the block is sent with
    these, and the executor runs it under the same interpreter (`course.engine.judge.remote`).
    """
    return dict(_OPEN[-1]) if _OPEN else None


def run_strict(fn: Callable[..., Any], *args: Any, module: types.ModuleType | None = None,
               **overrides: Any) -> Any:
    """Call `fn(*args)` with every `pallas_call` under the TPU interpreter and wait for the result."""
    with tpu_interpret(module, **overrides):
        return jax.block_until_ready(fn(*args))


def interpreter_failure(exc: BaseException) -> str | None:
    """The simulator's own error behind `exc` ('AssertionError', 'IndexError: ...'), or None.

    The TPU interpreter runs DMAs and loads in host callbacks; what fails there reaches the
    caller as `JaxRuntimeError: INTERNAL: CpuCallback error` with the simulator's traceback in
    the text, whose last line is the error itself (a bare `AssertionError` for a DMA between two
    dtypes). A grader turns that into a sentence about the learner's line.
    """
    text = str(exc)
    if "CpuCallback error" not in text:
        return None
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "an error inside the TPU interpreter"
