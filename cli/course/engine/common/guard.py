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

import itertools
import operator
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

# (label, namespace, ((name, value, closure contents), ...), {name: (position, value, closure contents)}, (the cells of
# those closures, what each held), [the namespace's keys, its values] when last found intact)
Entries = tuple[tuple[str, Any, tuple[Any, ...]], ...]
Namespace = tuple[str, Any, Entries, dict[str, tuple[int, Any, tuple[Any, ...]]], tuple[tuple[Any, ...], ...],
                  list[tuple[Any, ...]]]
Listeners = tuple[tuple[str, list[Any], tuple[Any, ...]], ...]
# (the namespaces, every key of them in order, every value, every cell of the entries' closures, what each held),
# as last found intact: one comparison of everything at once, when nothing changed
Whole = list[tuple[Any, ...]]
Snapshot = tuple[tuple[Namespace, ...], Listeners, Whole]
EMPTY: Snapshot = ((), (), [(), (), (), (), ()])
"""The snapshot of nothing (a judge runs no learner code)."""


def snapshot(extra_modules: Iterable[types.ModuleType | None]) -> Snapshot:
    """The grading machinery as it is now (call it before learner code runs)."""
    guarded = [m for name, m in list(sys.modules.items()) if isinstance(m, types.ModuleType)
               and (name.split(".")[0] in GUARDED_PREFIXES or name in GUARDED_MODULES)]
    extra = [m for m in extra_modules if isinstance(m, types.ModuleType)]
    chosen = {id(m) for m in guarded}
    spaces: list[Namespace] = [_space("sys.modules", sys.modules,
                                      tuple((k, m, ()) for k, m in list(sys.modules.items()) if id(m) in chosen))]
    for module in dict.fromkeys([*guarded, *extra]):
        mod_name = getattr(module, "__name__", "?")
        spaces.append(_space(mod_name, vars(module), _callables(vars(module))))
        for value in vars(module).values():
            # A class of the platform's own: replacing one of its methods is tampering too.
            if isinstance(value, type) and mod_name.startswith("course") and value.__module__ == mod_name:
                spaces.append(_space(f"{mod_name}.{value.__name__}", value.__dict__, _members(value)))
    for dotted in GUARDED_CLASSES:
        mod_name, _, cls_name = dotted.rpartition(".")
        cls = getattr(sys.modules.get(mod_name), cls_name, None)
        if isinstance(cls, type):
            spaces.append(_space(dotted, cls.__dict__, _members(cls)))
    monitoring = sys.modules.get("jax._src.monitoring")
    listeners = tuple((name, lst, tuple(lst)) for name in LISTENER_LISTS
                      if isinstance(lst := getattr(monitoring, name, None), list))
    return _snapshot(tuple(spaces), listeners)


def _snapshot(spaces: tuple[Namespace, ...], listeners: Listeners) -> Snapshot:
    """A snapshot of `spaces`, with everything they hold also laid end to end (`Whole`)."""
    guarded = tuple(space[1] for space in spaces if space[2])
    cells = tuple(cell for space in spaces if space[2] for cell in space[4][0])
    held = tuple(one for space in spaces if space[2] for one in space[4][1])
    keys = tuple(key for namespace in guarded for key in namespace)
    return spaces, listeners, [guarded, keys, tuple(v for namespace in guarded for v in namespace.values()), cells,
                               held]


def _space(label: str, namespace: Any, entries: Entries) -> Namespace:
    """One namespace of the snapshot, with its entries also kept by name in a dict of our own (`changes` walks the
    namespace and looks each of its names up there), the cells of their closures and what those held, and the
    namespace's whole contents as last found intact."""
    by_name = {name: (i, value, cells) for i, (name, value, cells) in enumerate(entries)}
    pairs = [pair for _, value, held in entries if held for pair in zip(value.__closure__, held, strict=True)]
    return (label, namespace, entries, by_name, (tuple(c for c, _ in pairs), tuple(h for _, h in pairs)),
            [tuple(namespace), tuple(namespace.values())])


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


ANSWERING = ("course", "jax._src.array.", "jax._src.stages.")
"""The labels of what answers a judge (the platform, and the JAX classes whose methods it reads): compared before
each answer leaves an executor; the whole snapshot is compared at each verdict and each turn of the judge's."""


def answering(snap: Snapshot) -> Snapshot:
    """The part of `snap` that answers a judge's requests, with the compile listeners (call it before learner code
    runs: it reads only the snapshot's own labels)."""
    return _snapshot(tuple(s for s in snap[0] if s[0].startswith(ANSWERING)), snap[1])


def _by_namespace(spaces: tuple[Namespace, ...], *, _len: Any = len, _all: Any = all, _tuple: Any = tuple,
                  _map: Any = map, _is: Any = operator.is_, _contents: Any = operator.attrgetter("cell_contents")
                  ) -> list[tuple[int, int, str]]:
    """(namespace, entry, what changed) for each entry of `spaces` no longer as the snapshot had it, namespace by
    namespace; each namespace found intact is noted as its new starting point."""
    found: list[tuple[int, int, str]] = []
    for k, (label, namespace, entries, expected, (cells, held), last) in enumerate(spaces):
        if not entries:
            continue
        keys, values = _tuple(namespace), _tuple(namespace.values())
        same = (_len(keys) == _len(last[0]) and _all(_map(_is, keys, last[0]))
                and _all(_map(_is, values, last[1])))
        before = _len(found)
        if not same:
            _walk(k, label, namespace, entries, expected, found)
        try:  # a closure's cells change in place, whatever the namespace holds
            kept = _all(_map(_is, _map(_contents, cells), held))
        except ValueError:  # a cell emptied since
            kept = False
        if not kept:
            found.extend(_held(k, label, entries))
        if not same and _len(found) == before:
            last[0], last[1] = keys, values
    return found


def _walk(k: int, label: str, namespace: Any, entries: Entries, expected: dict[str, tuple[int, Any, Any]],
          found: list[tuple[int, int, str]], *, _type: Any = type, _str: type = str, _len: Any = len) -> None:
    """Note in `found` each entry of the snapshot that `namespace` no longer binds to the same object."""
    met = 0
    for name, value in namespace.items():
        entry = expected.get(name) if _type(name) is _str else None
        if entry is None:
            continue
        met += 1
        if value is not entry[1]:
            found.append((k, entry[0], f"{label}.{name}" if label != "sys.modules" else f"the module {name}"))
    if met != _len(entries):
        found.extend(_removed(k, label, namespace, entries))


def _held(k: int, label: str, entries: Entries, *, _type: Any = type, _fn: Any = types.FunctionType,
          _tuple: Any = tuple, _len: Any = len, _any: Any = any, _zip: Any = zip, _cell: Any = _cell) -> list[
              tuple[int, int, str]]:
    """The entries of the snapshot whose closures no longer hold what they held."""
    found = []
    for i, (name, value, cells) in enumerate(entries):
        if cells:
            closure = value.__closure__ if _type(value) is _fn else None
            now = _tuple(_cell(c) for c in closure) if closure else ()
            if _len(now) != _len(cells) or _any(a is not b for a, b in _zip(now, cells)):
                found.append((k, i, f"what {label}.{name} holds"))
    return found


def _removed(k: int, label: str, namespace: Any, entries: Entries, *,
             _type: Any = type, _str: type = str) -> list[tuple[int, int, str]]:
    """The snapshot's names a namespace no longer holds (rare: only after tampering), found as `changes` finds
    the others, never by a lookup in the namespace itself."""
    present = {name for name in namespace if _type(name) is _str}
    return [(k, i, f"{label}.{name}" if label != "sys.modules" else f"the module {name}")
            for i, (name, _, _) in enumerate(entries) if name not in present]


def changes(snap: Snapshot, *, _len: Any = len, _any: Any = any, _all: Any = all, _tuple: Any = tuple,
            _sorted: Any = sorted, _map: Any = map, _is: Any = operator.is_, _chain: Any = itertools.chain,
            _contents: Any = operator.attrgetter("cell_contents"), _values: Any = operator.methodcaller("values"),
            _compare: Any = _by_namespace) -> list[str]:
    """What is no longer as the snapshot had it: names rebound or removed, closures changed, listeners gone.

    Values are compared by identity only (`operator.is_`: no code of the namespaces' objects runs). This runs
    before every answer an executor sends, so everything is first compared at once: every key and value of the
    guarded namespaces, in order, and what every cell of their closures holds, against the objects found when
    they were last intact. Only when something differs (a module's own global rebound, or tampering) is each
    namespace compared so, and one that differs is walked, never searched: each of its exact-`str` keys is
    looked up in the snapshot's own dict of names, so no key learner code planted is ever compared (with `==`)
    against ours, and a name the walk does not meet was removed. Every built-in it uses is bound when this
    module is imported.
    """
    spaces, listeners, whole = snap
    guarded, keys, values, cells, held = whole
    now_keys, now_values = _tuple(_chain(*guarded)), _tuple(_chain(*_map(_values, guarded)))
    try:
        same = (_len(now_keys) == _len(keys) and _all(_map(_is, now_keys, keys))
                and _all(_map(_is, now_values, values)) and _all(_map(_is, _map(_contents, cells), held)))
    except ValueError:  # a cell emptied since
        same = False
    found: list[tuple[int, int, str]] = [] if same else _compare(spaces)
    if not same and not found:
        whole[1], whole[2] = now_keys, now_values  # intact, one by one: the next comparison starts from here
    named = [text for _, _, text in _sorted(found)]
    for name, live, before_ in listeners:
        if _any(_all(x is not f for x in live) for f in before_):
            named.append(f"jax monitoring's {name}")
    return named
