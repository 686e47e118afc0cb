"""Running a learner's kernels for values: jitted once per grading, strictly interpreted, on a TPU's terms.

A jit made inside a check is a new function for JAX, traced and compiled again (and a check
that asks for `fresh_submission` has functions of its own). Under the strict TPU interpreter that compile costs about a
second per shape and dtype, so value checks share one jit of the learner's function for the
whole grading: `jitted_once(fn, key)` makes it the first time `key` is asked for and hands the
same one back later, and checks that use one shape and dtype compile it once between them.
(The jit also spares an un-jitted `pallas_call` its compile on every call.)

`pltpu.emit_pipeline` asks which TPU it runs on while it is traced, and on a CPU JAX knows
none (`ValueError: Unsupported TPU device kind: cpu`). `tpu_fallback(thunk)` retries such a
trace under an abstract mesh whose device is a TPU v5e, which the strict interpreter then runs
with the right values; any other error is left alone.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import jax

from course.grading.observe.calls.tpu import tpu_interpret

__all__ = ["abstract_tpu", "jitted_once", "needs_tpu", "runs_here", "strict_values", "tpu_fallback"]

T = TypeVar("T")
_JITS: dict[Any, Any] = {}
# The TPU the fallback pretends to run on: one core of a v5e, as COURSE's facts checked.
_DEVICE_KIND = "TPU v5 lite"


def runs_here(fn: Any) -> bool:
    """Whether `fn` runs (and can be traced) in this process: False for a judge's view of a learner's function."""
    remote = sys.modules.get("course.engine.judge.proxies")  # loaded wherever such a function exists
    return remote is None or not isinstance(fn, remote.RemoteFunction)


def jitted_once(fn: Callable[..., Any], key: Any) -> Any:
    """`jax.jit(fn)`, made the first time `key` is asked for in this grading process and reused after."""
    if not runs_here(fn):
        return fn.jitted_once()  # the executor jits it, once per shape there
    if key not in _JITS:
        _JITS[key] = jax.jit(fn)
    return _JITS[key]


@contextlib.contextmanager
def abstract_tpu() -> Iterator[None]:
    """Within the block, tracing sees a one-device abstract mesh of TPU v5e cores."""
    from jax._src import mesh as mesh_lib  # AbstractDevice has no public home in JAX 0.10

    device = mesh_lib.AbstractDevice(device_kind=_DEVICE_KIND, num_cores=1, platform="tpu")
    with jax.sharding.use_abstract_mesh(mesh_lib.AbstractMesh((1,), ("x",), abstract_device=device)):
        yield


def needs_tpu(exc: BaseException) -> bool:
    """Whether `exc` is JAX asking for a TPU while tracing (as `emit_pipeline` does on a CPU)."""
    return isinstance(exc, ValueError) and "Unsupported TPU device kind" in str(exc)


def tpu_fallback(thunk: Callable[[], T]) -> T:
    """`thunk()`, retried under `abstract_tpu()` when it fails only for want of a TPU."""
    try:
        return thunk()
    except ValueError as exc:
        if not needs_tpu(exc):
            raise
    with abstract_tpu():
        return thunk()


def strict_values(fn: Callable[..., Any], *args: Any, **overrides: Any) -> Any:
    """`fn(*args)` with every `pallas_call` under the strict TPU interpreter, waited for.

    `overrides` change the interpreter's parameters (`dma_execution_mode="eager"` lands each
    copy at its start). The trace retries on an abstract TPU when it needs one. In a judge's
    check, where `fn` is the learner's function seen from the judge, the executor runs it so.
    """
    if not runs_here(fn):
        return fn.strict(*args, **overrides)

    def run() -> Any:
        """One strict run, waited for."""
        with tpu_interpret(**overrides):
            return jax.block_until_ready(fn(*args))

    return tpu_fallback(run)
