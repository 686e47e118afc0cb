"""Host waits: does a call return before the device has finished, where does it wait, and when is a clock read.

JAX dispatches asynchronously: a jitted call returns a not-ready array at once and Python goes on
queuing work. Code that needs a value (`float`, `print`, `bool`, `np.asarray`, `device_get`,
`block_until_ready`, polling `is_ready`) waits for the device. On the CPU no transfer guard sees
those reads (the device-to-host guard never fires, the host-to-device one trips on the index of
`y[0]`), and a patch of the Python entry points misses the C++ ones (`np.asarray` reads through the
buffer protocol). So the verdict comes from a **gate**: `Gate.hold(tree)` returns copies of the
arrays that become ready only when a slow computation ends (a loop of matmuls, a few tenths of a
second of device work, calibrated on this machine). If a call given held arrays returns while
they are still not ready, it cannot have waited for anything computed from them. Burning CPU is
the point: a callback that waits on an event is no gate, since a computation with a callback runs
synchronously when its inputs are ready.

`WaitRecorder` only explains a verdict: while active it notes each Python-level wait made from the
learner's file, with its line and whether the array waited on was still pending.

`TimingLog` watches a timing function: its `clock` is a clock to hand over (`clock=log.clock`), and
`log.wrap(step)` a step function whose calls and outputs are logged. Every reading of the clock
records how many calls had started and returned, how many of their outputs were still not ready
and how many compiles had been recorded, so a check can say whether the warm-up was waited for,
whether each timed window ended after its results were ready, and whether a compile fell inside.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from course.grading.observe.calls.patching import replaced

__all__ = ["ClockRead", "Gate", "HostWait", "TimingLog", "WaitRecorder"]


def _slow_copy(tree: Any, seed: jax.Array, steps: jax.Array) -> Any:
    """`tree` again, plus zero times the sum of `steps` matmuls of a 384 x 384 matrix: ready only after them."""
    def body(_: Any, m: jax.Array) -> jax.Array:
        return jnp.tanh(m @ m)  # tanh keeps it bounded, so the sum is finite and zero times it is zero

    total = jnp.sum(jax.lax.fori_loop(0, steps, body, seed))
    return jax.tree.map(lambda a: a + (total * 0).astype(a.dtype), tree)


class Gate:
    """Holds arrays back: `hold(tree)` gives copies that become ready only after `seconds` of device work."""

    SIZE = 384

    def __init__(self, seconds: float = 0.3) -> None:
        """Compile the slow copy once and measure how many of its steps make `seconds` on this machine."""
        self.seconds = seconds
        self._fn = jax.jit(_slow_copy)
        self._seed = jnp.full((self.SIZE, self.SIZE), 0.01, jnp.float32)
        probe = 32
        jax.block_until_ready(self._fn(jnp.zeros(()), self._seed, probe))  # compiles, then runs
        start = time.perf_counter()
        jax.block_until_ready(self._fn(jnp.zeros(()), self._seed, probe))
        per_step = max((time.perf_counter() - start) / probe, 1e-5)
        self.steps = max(16, math.ceil(seconds / per_step))

    def hold(self, tree: Any, factor: float = 1.0) -> Any:
        """Copies of the arrays of `tree`, equal to them, not ready until about `factor * seconds` from now."""
        return self._fn(tree, self._seed, max(1, round(self.steps * factor)))


@dataclass(frozen=True)
class HostWait:
    """One Python-level wait made from the learner's file: what it was, where, and on a pending value or not."""

    what: str
    """`reads its value` (float, print, bool, ...), `block_until_ready`, `jax.device_get`, `np.asarray`, ..."""
    line: int
    pending: bool
    """Whether the array waited on was still being computed: then the call really waited."""
    polling: bool = False
    """`is_ready()`: no wait by itself, a wait when called in a loop."""


@dataclass(eq=False)
class WaitRecorder:
    """Notes the waits that code of the file at `path` makes while active (`with WaitRecorder(path) as w:`).

    Patched: reading an array's value (`float`, `int`, `bool`, `print`, f-strings, `tolist`, `max`),
    `item`, `__array__`, `block_until_ready`, `is_ready`, `jax.block_until_ready`,
    `jax.device_get`, `np.asarray` and `np.array` of JAX arrays; `namespaces` are module dicts
    (the learner's) where those functions may be bound by name. What is not Python (a NumPy read
    through the buffer protocol of a lone array, a C++ batched wait) is not seen: an explanation,
    never a verdict.
    """

    path: Path | str
    namespaces: tuple[dict[str, Any], ...] = ()
    waits: list[HostWait] = field(default_factory=list)

    def __post_init__(self) -> None:
        """Prepare the stack of patches."""
        self._target = str(self.path)
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> WaitRecorder:
        """Install the patches; everything is put back on exit."""
        from jax._src.array import ArrayImpl  # the array class; its waiting methods have no public hook

        value = ArrayImpl.__dict__["_value"]
        enter = self._stack.enter_context
        enter(replaced(ArrayImpl, "_value", property(self._noting("reads its value", value.fget))))
        for name in ("block_until_ready", "item", "__array__"):
            enter(replaced(ArrayImpl, name, self._noting(name, getattr(ArrayImpl, name))))
        enter(replaced(ArrayImpl, "is_ready", self._noting("is_ready", ArrayImpl.is_ready, polling=True)))
        for owner, name, what in ((jax, "block_until_ready", "jax.block_until_ready"),
                                  (jax, "device_get", "jax.device_get"),
                                  (np, "asarray", "np.asarray"), (np, "array", "np.array")):
            # Public functions count only when the learner calls them: JAX itself calls np.asarray often.
            enter(replaced(owner, name, self._noting(what, getattr(owner, name), direct=True), *self.namespaces))
        return self

    def __exit__(self, *exc: object) -> None:
        """Put every patched function back."""
        self._stack.close()

    def _noting(self, what: str, original: Callable[..., Any], polling: bool = False,
                direct: bool = False) -> Callable[..., Any]:
        """`original`, noting first each call on JAX arrays that the learner's file makes."""
        def noted(*args: Any, **kwargs: Any) -> Any:
            line = _caller_line(self._target, direct)
            if line is not None and _arrays(args[:1]):
                self.waits.append(HostWait(what, line, _pending(args[:1]), polling))
            return original(*args, **kwargs)

        return noted

    def first(self) -> HostWait | None:
        """The wait that explains a call that did not return early: the first on a pending value, if any."""
        for keep in (lambda w: w.pending and not w.polling, lambda w: w.pending, lambda w: True):
            found = [w for w in self.waits if keep(w)]
            if found:
                return found[0]
        return None

    def polled_again(self, wait: HostWait) -> bool:
        """Whether the line of a polling wait asked a pending value more than once: a busy loop, hence a wait."""
        return sum(1 for w in self.waits if w.polling and w.pending and w.line == wait.line) > 1


_JAX_DIRS = tuple(f"{os.sep}{name}{os.sep}" for name in ("jax", "jaxlib"))


def _caller_line(target: str, direct: bool) -> int | None:
    """The learner's line that asked for the wait: the caller itself (`direct`), or the first frame past JAX's own."""
    frame = sys._getframe(2)
    if not direct:
        for _ in range(32):  # a bound: `float(y)` reaches `_value` through a frame or two of JAX
            if frame is None or not any(d in frame.f_code.co_filename for d in _JAX_DIRS):
                break
            frame = frame.f_back
    return frame.f_lineno if frame is not None and frame.f_code.co_filename == target else None


def _arrays(args: tuple[Any, ...]) -> list[jax.Array]:
    """The concrete JAX arrays among `args` and the lists, tuples and dicts in them."""
    return [a for a in jax.tree_util.tree_leaves(list(args))
            if isinstance(a, jax.Array) and not isinstance(a, jax.core.Tracer)]


def _pending(args: tuple[Any, ...]) -> bool:
    """Whether any JAX array among `args` is not ready yet."""
    return any(not _ready(a) for a in _arrays(args))


def _ready(array: Any) -> bool:
    """`array.is_ready()` through the unpatched method; a deleted (donated) array counts as ready."""
    try:
        return bool(_IS_READY(array))
    except Exception:  # JAX raises RuntimeError for a deleted array: nothing left to wait for
        return True


def _unpatched_is_ready() -> Callable[[Any], Any]:
    """JAX's own `is_ready`, taken when this module loads, before any recorder patches it."""
    from jax._src.array import ArrayImpl  # the array class; no public name for its method

    return ArrayImpl.is_ready


_IS_READY = _unpatched_is_ready()


@dataclass(frozen=True)
class ClockRead:
    """What had happened when the clock was read: calls started and returned, outputs not ready, compiles."""

    index: int
    """1 for the first reading."""
    calls_started: int
    calls_returned: int
    pending: int
    """Outputs of returned calls that were still being computed."""
    warmup_pending: bool
    """Whether the first call's output was still being computed."""
    compiles: int
    """Compiles recorded so far by the `compiles` counter the log was given."""


@dataclass(eq=False)
class TimingLog:
    """A clock and a step function to hand to a timing function, and what each clock reading saw."""

    compiles: Callable[[], int] = lambda: 0
    """How many compiles have happened so far (`CompileRecorder.count`)."""
    reads: list[ClockRead] = field(default_factory=list)
    outputs: list[Any] = field(default_factory=list)
    calls_started: int = 0

    def clock(self) -> float:
        """`time.perf_counter()`, noting what had happened when it was read."""
        pending = sum(1 for out in self.outputs if not _all_ready(out))
        warmup = bool(self.outputs) and not _all_ready(self.outputs[0])
        self.reads.append(ClockRead(len(self.reads) + 1, self.calls_started, len(self.outputs), pending, warmup,
                                    self.compiles()))
        return time.perf_counter()

    def wrap(self, step: Callable[..., Any]) -> Callable[..., Any]:
        """`step`, with each call and its output logged."""
        def logged(*args: Any, **kwargs: Any) -> Any:
            self.calls_started += 1
            out = step(*args, **kwargs)
            self.outputs.append(out)
            return out

        return logged

    def calls_between(self, first: ClockRead, last: ClockRead) -> int:
        """Calls started after the reading `first` and returned by the reading `last`."""
        return last.calls_returned - first.calls_started


def _all_ready(tree: Any) -> bool:
    """Whether every JAX array of `tree` has been computed."""
    return all(_ready(a) for a in jax.tree_util.tree_leaves(tree) if isinstance(a, jax.Array))
