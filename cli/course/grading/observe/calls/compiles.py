"""Counting XLA compilations through the public `jax.monitoring` events, filtered by function name.

JAX reports each backend compile as the event `/jax/core/compile/backend_compile_duration` with
`fun_name="jit(name)"`. Eager operations compile helpers too (`jit(broadcast_in_dim)`,
`jit(_pad)`), so a check counts only the names of the learner's own functions
(`own_function_names`), and no recorder ever keeps a compile of JAX's own jitted functions, even
under a name of the learner's (`course.grading.observe.calls.ownership`: an eager `jnp.add` compiles as
`jit(add)`, as a learner's `jax.jit(jnp.add)` does). The TPU interpreter compiles helpers of its
own lazily, on whichever call first takes a data-dependent path; compiles made under its frames
are never the learner's and are left out. JAX has no public way to unregister a listener, so one
listener is registered per process and dispatches to the recorders that are active at the time.
"""

from __future__ import annotations

import functools
import sys
import threading
import types
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from course.grading.judge.source import code_names, defined_names
from course.grading.observe.calls.ownership import call_is_jax_helper

__all__ = [
    "install_listener",
    "BACKEND_COMPILE_EVENT",
    "CompileEvent",
    "CompileRecorder",
    "matches_name",
    "own_function_names",
    "record_compiles",
    "via_interpreter",
]

BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
# Frames of the TPU interpreter: what compiles or runs under them is the simulator's, not the learner's.
INTERPRETER_DIR = "jax/_src/pallas/mosaic/interpret/"

_lock = threading.Lock()
_active: list[CompileRecorder] = []
_installed = False


@dataclass(frozen=True)
class CompileEvent:
    """One backend compile: the function's name as JAX reports it (`jit(f)`) and its duration."""

    fun_name: str
    seconds: float


def matches_name(fun_name: str, names: frozenset[str]) -> bool:
    """True when `fun_name` is `name` or `jit(name)` for one of `names`."""
    if fun_name in names:
        return True
    return fun_name.startswith("jit(") and fun_name.endswith(")") and fun_name[4:-1] in names


@dataclass(eq=False)
class CompileRecorder:
    """Records the backend compiles that happen while it is active (`with CompileRecorder():`).

    With `names`, only compiles of functions with those names (`f` or `jit(f)`) are kept; with
    `path` as well, so are compiles made while code of the file at `path` is on the stack (an
    un-jitted `pallas_call` compiles as `jit(wrapped)`, a name of Pallas's own, from the learner's
    line). Compiles of JAX's own jitted functions (eager `jnp.where`, `x[:3]`) are kept only by a
    recorder with neither, which keeps everything; those of the TPU interpreter, never.
    """

    names: Iterable[str] | None = None
    events: list[CompileEvent] = field(default_factory=list)
    path: str | None = None

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

    def wants(self, fun_name: str) -> bool:
        """Whether a compile of `fun_name` passes this recorder's name filter."""
        return self._filter is None or matches_name(fun_name, self._filter)

    def _receive(self, fun_name: str, seconds: float) -> None:
        """Keep one event that passed the filters."""
        self.events.append(CompileEvent(fun_name, seconds))

    def count(self, names: Iterable[str] | None = None) -> int:
        """How many compiles were recorded, optionally only of functions named in `names`."""
        if names is None:
            return len(self.events)
        wanted = frozenset(names)
        return sum(1 for e in self.events if matches_name(e.fun_name, wanted))

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
        by_name = [rec for rec in _active if rec.wants(fun_name)]
        by_file = [rec for rec in _active if rec.path and rec not in by_name]
    # Looking at the stack costs more than the name test, so only for events someone may want.
    if not by_name and not by_file:
        return
    files = _stack_files()
    if any(INTERPRETER_DIR in f.replace("\\", "/") for f in files):
        return
    wanted = by_name + [r for r in by_file if r.path in files]
    if call_is_jax_helper(sys._getframe()):  # one of JAX's eager operations: only "everything" keeps it
        wanted = [r for r in wanted if r._filter is None and not r.path]
    for rec in wanted:
        rec._receive(fun_name, float(duration_secs))


def _stack_files() -> set[str]:
    """The files of every frame on the current Python stack."""
    files = set()
    frame = sys._getframe(1)
    while frame is not None:
        files.add(frame.f_code.co_filename)
        frame = frame.f_back
    return files


def via_interpreter() -> bool:
    """True when the current Python stack passes through the TPU interpreter's own code."""
    return any(INTERPRETER_DIR in f.replace("\\", "/") for f in _stack_files())


def install_listener() -> None:
    """Register the one process-wide compile listener now (the grading plugin does, before learner code runs)."""
    _install()


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
    """Names of the functions a learner's module defines, and of what its jitted objects wrap.

    Every function and lambda written in the module's file counts, at any depth (inner functions,
    lambdas in a dict comprehension). So does the target of each jitted or AOT-compiled object
    the module holds, at module scope or in a dict, list, tuple or object of its own
    (`jax.jit(jnp.add)` compiles as `jit(add)`).
    """
    path = getattr(module, "__file__", None)
    names: set[str] = set()
    if isinstance(path, str):
        names.update(defined_names(path))
    for value in _held_values(module):
        compiled_from = _program_name(value)
        if compiled_from is not None:
            names.add(compiled_from)
            continue
        target = _unwrap(value)
        code = getattr(target, "__code__", None)
        if isinstance(code, types.CodeType) and code.co_filename == path:
            names.update(code_names(code))
        if target is not value:
            name = getattr(target, "__name__", None)
            if isinstance(name, str):
                names.add(name)
    return names


def _held_values(module: types.ModuleType, depth: int = 3) -> Iterator[Any]:
    """The module's values, and those inside its dicts, lists, tuples and objects, a few levels deep."""
    seen: set[int] = set()
    todo = [(v, 0) for k, v in vars(module).items() if not k.startswith("__")]
    while todo and len(seen) < 10_000:  # bounds the walk, whatever the learner built
        value, level = todo.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        yield value
        if level >= depth:
            continue
        if isinstance(value, dict):
            inner: Iterable[Any] = value.values()
        elif isinstance(value, list | tuple | set | frozenset):
            inner = value
        elif getattr(type(value), "__module__", None) == module.__name__:
            inner = vars(value).values() if hasattr(value, "__dict__") else ()
        else:
            continue
        todo.extend((v, level + 1) for v in inner)


def _program_name(value: Any) -> str | None:
    """For an AOT-compiled program, the name of the function it was compiled from."""
    unsafe = getattr(getattr(value, "_executable", None), "unsafe_call", None)
    name = getattr(unsafe, "name", None)
    if isinstance(name, str) and name.startswith("jit(") and name.endswith(")"):
        return name[4:-1]
    return None


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
