"""Counting XLA compilations through the public `jax.monitoring` events, filtered by function name.

JAX reports each backend compile as the event `/jax/core/compile/backend_compile_duration` with
`fun_name="jit(name)"`. Eager operations compile helpers too (`jit(broadcast_in_dim)`,
`jit(stage)`), so a check counts only the names of the learner's own functions. JAX has no public
way to unregister a listener, so one listener is registered per process and dispatches to the
recorders that are active at the time.
"""

from __future__ import annotations

import functools
import threading
import types
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "BACKEND_COMPILE_EVENT",
    "CompileEvent",
    "CompileRecorder",
    "own_function_names",
    "record_compiles",
]

BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"

_lock = threading.Lock()
_active: list[CompileRecorder] = []
_installed = False


@dataclass(frozen=True)
class CompileEvent:
    """One backend compile: the function's name as JAX reports it (`jit(f)`) and its duration."""

    fun_name: str
    seconds: float


def _matches(fun_name: str, names: frozenset[str]) -> bool:
    """True when `fun_name` is `name` or `jit(name)` for one of `names`."""
    if fun_name in names:
        return True
    return fun_name.startswith("jit(") and fun_name.endswith(")") and fun_name[4:-1] in names


@dataclass(eq=False)
class CompileRecorder:
    """Records the backend compiles that happen while it is active (`with CompileRecorder():`).

    With `names`, only compiles of functions with those names (`f` or `jit(f)`) are kept.
    """

    names: Iterable[str] | None = None
    events: list[CompileEvent] = field(default_factory=list)

    def __post_init__(self) -> None:
        """Freeze the filter so matching is cheap and the caller's set can change freely."""
        self._filter = None if self.names is None else frozenset(self.names)

    def __enter__(self) -> CompileRecorder:
        """Start recording; the process-wide listener is installed on first use."""
        _install()
        with _lock:
            _active.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        """Stop recording; events already kept stay available."""
        with _lock:
            if self in _active:
                _active.remove(self)

    def _receive(self, fun_name: str, seconds: float) -> None:
        """Keep one event if it passes the name filter."""
        if self._filter is None or _matches(fun_name, self._filter):
            self.events.append(CompileEvent(fun_name, seconds))

    def count(self, names: Iterable[str] | None = None) -> int:
        """How many compiles were recorded, optionally only of functions named in `names`."""
        if names is None:
            return len(self.events)
        wanted = frozenset(names)
        return sum(1 for e in self.events if _matches(e.fun_name, wanted))

    def fun_names(self) -> list[str]:
        """The names of the recorded compiles, in order."""
        return [e.fun_name for e in self.events]


def record_compiles(names: Iterable[str] | None = None) -> CompileRecorder:
    """A recorder to use as `with record_compiles(names) as rec: ...`, then `rec.count()`."""
    return CompileRecorder(names=names)


def _dispatch(event: str, duration_secs: float, **kwargs: Any) -> None:
    """The single process-wide listener: hand backend compile events to active recorders."""
    if event != BACKEND_COMPILE_EVENT:
        return
    fun_name = str(kwargs.get("fun_name", ""))
    with _lock:
        recorders = list(_active)
    for rec in recorders:
        rec._receive(fun_name, float(duration_secs))


def _install() -> None:
    """Register the listener once per process (JAX offers no public way to remove it)."""
    global _installed
    with _lock:
        if _installed:
            return
        import jax.monitoring

        jax.monitoring.register_event_duration_secs_listener(_dispatch)
        _installed = True


def own_function_names(module: types.ModuleType) -> set[str]:
    """Names of the functions a learner's module defines or wraps with `jax.jit`.

    Walks the code objects reachable from the module's functions, so lambdas and inner
    functions count too, and adds the name of whatever each module-level jitted object wraps
    (`jax.jit(jnp.add)` compiles as `jit(add)`).
    """
    path = getattr(module, "__file__", None)
    names: set[str] = set()
    for value in vars(module).values():
        target = _unwrap(value)
        code = getattr(target, "__code__", None)
        if isinstance(code, types.CodeType) and code.co_filename == path:
            names.update(_code_names(code))
        if target is not value:
            name = getattr(target, "__name__", None)
            if isinstance(name, str):
                names.add(name)
    return names


def _unwrap(value: Any) -> Any:
    """What a jitted object or a `functools.partial` ultimately calls, or `value` itself."""
    for _ in range(8):  # a bound on nesting, since a learner's object could wrap itself
        if isinstance(value, functools.partial):
            value = value.func
        elif callable(value) and hasattr(value, "lower") and hasattr(value, "__wrapped__"):
            value = value.__wrapped__
        else:
            break
    return value


def _code_names(code: types.CodeType) -> Iterator[str]:
    """The name of `code` and of every function or lambda defined inside it."""
    yield code.co_name
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _code_names(const)
