"""What compiled programs really ran, and at which argument types: one record per execution.

A compile event says a program was built for some shapes; a call that hits the cache logs
nothing, so it cannot say which program each call ran. While a `RunRecorder` is active, every
`jax.jit` call and every call of an ahead-of-time `Compiled` (from `jit(f).lower(...).compile()`)
is recorded with the types of the arguments it executed on, however the jitted object is held:
at module scope, in a dict, in an object or built per call.

JAX dispatches a cached call from C++ without returning to Python, so the recorder turns that fast
path off while it is active (JAX then calls back into Python for every call, where the arguments
are seen). It empties JAX's C++ dispatch caches on entry, so no fast entry survives from before,
and on exit, since an entry made without the fast path keeps going through Python until it is
dropped. Only those caches: traces and compiled programs are kept, so recording recompiles
nothing. This relies on private names of JAX 0.10 (`pjit._get_fastpath_data`,
`pjit._pjit_call_impl_python`, the C++ caches that `jax.clear_caches` also empties); the tests
of this module fail loudly if a JAX upgrade moves them.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import jax

from course.grading.observe.calls.compiles import matches_name, via_interpreter
from course.grading.observe.calls.ownership import call_is_jax_helper

__all__ = ["ProgramRun", "RunRecorder", "record_runs"]

_lock = threading.Lock()
_active: list[RunRecorder] = []
_restore: contextlib.ExitStack | None = None


@dataclass(frozen=True)
class ProgramRun:
    """One execution of a compiled program: its name and the types of the arguments it ran on, and (when the
    recorder keeps programs) the program itself and what it donated."""

    fun_name: str
    """As compile events name it: `jit(f)` for a jitted or AOT-compiled `f`."""
    arg_types: tuple[Any, ...]
    """One `jax.core.ShapedArray` per flattened array argument (static arguments are not passed)."""
    program: Any = field(default=None, compare=False, repr=False)
    """The closed jaxpr that ran (a `jax.jit` call's; None for an ahead-of-time `Compiled`, or when not kept)."""
    donated: tuple[bool, ...] = ()
    """Per flattened argument, whether the program was asked to donate it."""
    args: tuple[Any, ...] = field(default=(), compare=False, repr=False)
    """The arguments it ran on, to tell which of a call's inputs reached it as themselves (kept with programs)."""
    outs: tuple[Any, ...] = field(default=(), compare=False, repr=False)
    """What it returned, to follow a value from one program into the next (kept with programs)."""
    params: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """The jit's parameters (shardings, names, what it keeps), to compile the same program again (kept with
    programs)."""
    helper: bool = False
    """One of JAX's own jitted functions, or a primitive applied eagerly: an operation, not a jit of the
    learner's (kept with programs)."""
    frames: tuple[tuple[str, int], ...] = ()
    """(file, line) of the Python frames that made the call, innermost first (kept with programs)."""

    @property
    def shapes(self) -> tuple[tuple[int, ...], ...]:
        """The shapes of the arguments, in order."""
        return tuple(tuple(t.shape) for t in self.arg_types)

    def largest_size(self) -> int:
        """The number of elements of the largest argument, 0 when it has none."""
        return max((int(t.size) for t in self.arg_types), default=0)


@dataclass(eq=False)
class RunRecorder:
    """Records the compiled programs executed while it is active (`with RunRecorder(names):`).

    With `names`, only programs of functions with those names (`f` or `jit(f)`) are kept, and
    never one of JAX's own jitted functions run by an eager operation (`jnp.where`'s `_where`).
    """

    names: Iterable[str] | None = None
    runs: list[ProgramRun] = field(default_factory=list)
    programs: bool = False
    """Keep each run's program, donations and arguments too (`ProgramRun.program`)."""

    def __post_init__(self) -> None:
        """Freeze the filter so matching is cheap and the caller's set can change freely."""
        self._filter = None if self.names is None else frozenset(self.names)

    def __enter__(self) -> RunRecorder:
        """Start recording; the first active recorder turns JAX's fast dispatch off."""
        global _restore
        with _lock:
            if not _active:
                _restore = _instrument()
            _active.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        """Stop recording; the last active recorder gives JAX its fast dispatch back."""
        global _restore
        with _lock:
            if self in _active:
                _active.remove(self)
            if not _active and _restore is not None:
                _restore.close()
                _restore = None

    def _receive(self, fun_name: str, arg_types: tuple[Any, ...], ran: dict[str, Any]) -> None:
        """Keep one execution if it passes the name filter (with what `ran` says of it, when keeping programs)."""
        if self._filter is None or matches_name(fun_name, self._filter):
            if self.programs:
                params = ran["params"]
                self.runs.append(ProgramRun(
                    fun_name, arg_types, params.get("jaxpr"), tuple(bool(d) for d in params.get("donated_invars", ())),
                    ran["args"], ran["outs"], params, ran["helper"], ran["frames"]))
            else:
                self.runs.append(ProgramRun(fun_name, arg_types))

    def count(self) -> int:
        """How many executions were recorded."""
        return len(self.runs)

    def fun_names(self) -> list[str]:
        """The names of the executed programs, in order."""
        return [r.fun_name for r in self.runs]


def record_runs(names: Iterable[str] | None = None, *, programs: bool = False) -> RunRecorder:
    """A recorder to use as `with record_runs(names) as rec: ...`, then `rec.runs` (with `programs`, each run's
    program, donations and arguments too)."""
    return RunRecorder(names=names, programs=programs)


def _notify(fun_name: str, args: Iterable[Any], params: dict[str, Any] | None = None, outs: Any = (),
            operation: bool = False) -> None:
    """Hand one execution to the active recorders; calls under a trace are not executions. `operation`: one of
    JAX's own, whatever the stack says (an eager `jax.device_put`)."""
    with _lock:
        recorders = list(_active)
    if not recorders:
        return
    flat = jax.tree_util.tree_leaves(list(args))
    if any(isinstance(a, jax.core.Tracer) for a in flat):
        return
    wanted = [r for r in recorders if r._filter is None or matches_name(fun_name, r._filter)]
    helper = operation or (bool(wanted) and call_is_jax_helper(sys._getframe()))
    if helper:  # one of JAX's eager operations, not a program of theirs
        wanted = [r for r in wanted if r._filter is None]
    if not wanted or via_interpreter():
        return
    types = tuple(jax.typeof(a) for a in flat)
    ran = {"params": params or {}, "args": tuple(flat), "outs": tuple(jax.tree_util.tree_leaves(outs)),
           "helper": helper, "frames": _frames(sys._getframe(1))} if any(r.programs for r in wanted) else {}
    for rec in wanted:
        rec._receive(fun_name, types, ran)


def _frames(frame: Any, keep: int = 40) -> tuple[tuple[str, int], ...]:
    """(file, line) of the Python stack from `frame` outwards, innermost first."""
    found = []
    while frame is not None and len(found) < keep:
        found.append((frame.f_code.co_filename, frame.f_lineno))
        frame = frame.f_back
    return tuple(found)


def _instrument() -> contextlib.ExitStack:
    """Route every jitted and AOT call through Python and record it; returns what undoes that."""
    from jax._src import dispatch, pjit, stages  # no public hook sees a cached call

    from course.grading.observe.calls.patching import replaced

    run_python = pjit._pjit_call_impl_python
    call_compiled = stages.Compiled.__call__

    def recording_run(*args: Any, **params: Any) -> Any:
        result = run_python(*args, **params)  # recorded once it ran: with what it returned
        _notify(f"jit({params.get('name', '')})", args, params, result[0])
        return result

    put = dispatch._batched_device_put_impl

    def recording_put(*args: Any, **params: Any) -> Any:  # an eager `jax.device_put`: no program, maybe a copy
        result = put(*args, **params)
        _notify("device_put", args, {"copy_semantics": tuple(params.get("copy_semantics", ()))}, result, True)
        return result

    def recording_call(self: Any, *args: Any, **kwargs: Any) -> Any:
        unsafe = getattr(getattr(self, "_executable", None), "unsafe_call", None)
        result = call_compiled(self, *args, **kwargs)
        _notify(str(getattr(unsafe, "name", "")), (args, kwargs), None, result)
        return result

    stack = contextlib.ExitStack()
    stack.callback(_clear_dispatch_caches)  # runs last: drops the entries that have no fast path
    stack.enter_context(replaced(pjit, "_get_fastpath_data", lambda *a, **k: None))
    stack.enter_context(replaced(pjit, "_pjit_call_impl_python", recording_run))
    stack.enter_context(replaced(stages.Compiled, "__call__", recording_call))
    stack.enter_context(replaced(dispatch, "_batched_device_put_impl", recording_put))
    _clear_dispatch_caches()  # a call cached before now would still take the fast path
    return stack


def _clear_dispatch_caches() -> None:
    """Empty the C++ caches that dispatch a cached `jit` call without Python (as `jax.clear_caches` does)."""
    from jax._src import pjit
    from jax._src.lib import _jax

    pjit._cpp_pjit_cache_fun_only.clear()
    pjit._cpp_pjit_cache_explicit_attributes.clear()
    _jax.PjitFunctionCache.clear_all()
