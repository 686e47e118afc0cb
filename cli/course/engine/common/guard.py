"""The content guard: the grading machinery noted before learner code runs, compared before each check's verdict.

A check is only as true as the code that runs it and the facts it reads. `snapshot` notes every
function and class of pytest, pluggy and `course` (the graders and `course.grading` included),
the methods of the JAX classes checks read (`ArrayImpl.is_deleted`, lowering and
`memory_analysis`), what the machinery's functions hold in their closures, and the listeners of
`jax.monitoring` that count compiles. The notary keeps the snapshot where learner code cannot
reach it and calls `changes` before it writes each check's verdict (at the check's teardown, when
its setup and call are over) and before the final report.

`changes` compares values by identity only, and walks each namespace's own items instead of
looking names up in it: a lookup would compare keys with `==`, and a key planted by learner code
could run its own `__eq__` inside the notary. (It never calls `id()` either: every call of it is
an audited event, and the comparison runs before each check's verdict.) Replacing a function's code or
the defaults of the machinery's functions in place is refused outright by the notary's guard hook
(`course.engine.common.notary`).
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterable
from typing import Any

# Modules whose functions and classes decide verdicts; replacing any of them is tampering.
GUARDED_PREFIXES = ("course", "_pytest", "pytest", "pluggy")
# Single modules (not their submodules: JAX and NumPy keep state in theirs) whose functions
# graders, the plugin and the facts checks read rely on.
GUARDED_MODULES = (
    "builtins", "json", "numpy", "jax", "jax.numpy", "jax.monitoring", "jax.stages",
    "jax._src.monitoring", "jax._src.stages", "jax._src.api", "jax._src.pjit",
)
GUARDED_CLASSES = (
    "_pytest.reports.BaseReport",
    "_pytest.reports.TestReport",
    "_pytest.runner.CallInfo",
    "_pytest.python.Function",
    "_pytest.main.Session",
    "pluggy._hooks.HookCaller",
    "pluggy._manager.PluginManager",
    "jax._src.array.ArrayImpl",
    "jax._src.stages.Lowered",
    "jax._src.stages.Compiled",
    "jax._src.stages.Traced",
)
LISTENER_LISTS = ("_event_duration_secs_listeners", "_event_listeners", "_event_time_span_listeners")

# (label, namespace, ((name, value, closure contents), ...))
Namespace = tuple[str, Any, tuple[tuple[str, Any, tuple[Any, ...]], ...]]
Snapshot = tuple[tuple[Namespace, ...], tuple[tuple[str, list[Any], tuple[Any, ...]], ...]]


def snapshot(extra_modules: Iterable[types.ModuleType | None]) -> Snapshot:
    """The grading machinery as it is now (call it before learner code runs)."""
    guarded = [m for name, m in list(sys.modules.items()) if isinstance(m, types.ModuleType)
               and (name.split(".")[0] in GUARDED_PREFIXES or name in GUARDED_MODULES)]
    extra = [m for m in extra_modules if isinstance(m, types.ModuleType)]
    chosen = {id(m) for m in guarded}
    spaces: list[Namespace] = [("sys.modules", sys.modules,
                                tuple((k, m, ()) for k, m in list(sys.modules.items()) if id(m) in chosen))]
    for module in dict.fromkeys([*guarded, *extra]):
        mod_name = getattr(module, "__name__", "?")
        spaces.append((mod_name, vars(module), _callables(vars(module))))
        for value in vars(module).values():
            # A class of the platform's own: replacing one of its methods is tampering too.
            if isinstance(value, type) and mod_name.startswith("course") and value.__module__ == mod_name:
                spaces.append((f"{mod_name}.{value.__name__}", value.__dict__, _members(value)))
    for dotted in GUARDED_CLASSES:
        mod_name, _, cls_name = dotted.rpartition(".")
        cls = getattr(sys.modules.get(mod_name), cls_name, None)
        if isinstance(cls, type):
            spaces.append((dotted, cls.__dict__, _members(cls)))
    monitoring = sys.modules.get("jax._src.monitoring")
    listeners = tuple((name, lst, tuple(lst)) for name in LISTENER_LISTS
                      if isinstance(lst := getattr(monitoring, name, None), list))
    return tuple(spaces), listeners


def _callables(namespace: dict[str, Any]) -> tuple[tuple[str, Any, tuple[Any, ...]], ...]:
    """(name, value, closure contents) of the callables a module binds."""
    return tuple((k, v, _cells(v)) for k, v in list(namespace.items())
                 if callable(v) and not k.startswith("__"))


def _members(cls: type) -> tuple[tuple[str, Any, tuple[Any, ...]], ...]:
    """(name, value, closure contents) of what a class defines itself."""
    return tuple((k, v, _cells(v)) for k, v in list(vars(cls).items())
                 if k not in ("__dict__", "__weakref__", "__doc__"))


def _cell(cell: Any) -> Any:
    """One cell's contents, or None when it is empty."""
    try:
        return cell.cell_contents
    except ValueError:
        return None


def _cells(value: Any) -> tuple[Any, ...]:
    """What a function's closure holds now (empty for anything else)."""
    closure = value.__closure__ if type(value) is types.FunctionType else None
    return tuple(_cell(c) for c in closure) if closure else ()


_MISSING = object()
ANSWERING = ("course", "jax._src.array.", "jax._src.stages.")
"""The labels of what answers a judge (the platform, and the JAX classes whose methods it reads): compared before
each answer leaves an executor; the whole snapshot is compared at each verdict and each turn of the judge's."""


def answering(snap: Snapshot) -> Snapshot:
    """The part of `snap` that answers a judge's requests, with the compile listeners (call it before learner code
    runs: it reads only the snapshot's own labels)."""
    spaces, listeners = snap
    return tuple(s for s in spaces if s[0].startswith(ANSWERING)), listeners



def changes(snap: Snapshot, *, _len: Any = len, _zip: Any = zip, _any: Any = any, _all: Any = all,
            _type: Any = type, _str: type = str, _tuple: Any = tuple, _fn: Any = types.FunctionType,
            _cell: Any = _cell, _missing: Any = _MISSING) -> list[str]:
    """What is no longer as the snapshot had it: names rebound or removed, closures changed, listeners gone.

    Values are compared by identity only. Each namespace is walked, never searched: its exact-`str`
    keys are copied into a dict of our own first, so no key learner code planted is ever compared
    (with `==`) against ours. Every built-in it uses is bound when this module is imported.
    """
    spaces, listeners = snap
    found = []
    for label, namespace, entries in spaces:
        now = {k: v for k, v in namespace.items() if _type(k) is _str}
        for name, value, cells in entries:
            if now.get(name, _missing) is not value:
                found.append(f"{label}.{name}" if label != "sys.modules" else f"the module {name}")
            elif cells:
                closure = value.__closure__ if _type(value) is _fn else None
                held = _tuple(_cell(c) for c in closure) if closure else ()
                if _len(held) != _len(cells) or _any(a is not b for a, b in _zip(held, cells)):
                    found.append(f"what {label}.{name} holds")
    for name, live, before in listeners:
        if _any(_all(x is not f for x in live) for f in before):
            found.append(f"jax monitoring's {name}")
    return found
