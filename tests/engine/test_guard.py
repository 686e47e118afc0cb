"""The content guard finds every change to the machinery it noted, and runs no code of the objects it compares."""

from __future__ import annotations

import types
from collections.abc import Callable

import pytest

from course.engine.common import guard


def _machinery() -> types.ModuleType:
    """A module of the grading machinery in miniature: functions, one holding a closure, a class, and a global."""
    module = types.ModuleType("course_probe")

    def make() -> Callable[[], int]:
        seen = [1]

        def counted() -> int:
            return len(seen)

        return counted

    module.count = make()
    module.helper = lambda: 1
    module.State = type("State", (), {"__module__": "course_probe", "step": lambda self: 2})
    module.calls = 0
    return module


@pytest.fixture
def probe() -> tuple[types.ModuleType, guard.Snapshot]:
    """The miniature machinery and the part of a snapshot that answers a judge, taken now."""
    module = _machinery()
    return module, guard.answering(guard.snapshot([module]))


def test_nothing_changed_is_nothing_found(probe: tuple[types.ModuleType, guard.Snapshot]) -> None:
    """The machinery as it was: no change, however often it is compared."""
    module, snap = probe
    assert [guard.changes(snap) for _ in range(3)] == [[], [], []]


def test_a_rebound_function_is_found_by_name_until_it_is_put_back(
        probe: tuple[types.ModuleType, guard.Snapshot]) -> None:
    """A function rebound is named at each comparison while it stays rebound, and no longer once it is back."""
    module, snap = probe
    original, module.helper = module.helper, lambda: 2
    assert guard.changes(snap) == guard.changes(snap) == ["course_probe.helper"]
    module.helper = original
    assert guard.changes(snap) == []


def test_a_global_of_the_machinery_may_change_but_a_later_rebinding_is_still_found(
        probe: tuple[types.ModuleType, guard.Snapshot]) -> None:
    """A module's own state (a counter, a new name) is no tampering, and the comparison that accepts it still
    finds a function rebound after it: what was accepted is the starting point, never the snapshot's entries."""
    module, snap = probe
    module.calls += 1
    module.added = "new"
    assert guard.changes(snap) == []
    module.calls += 1
    module.helper = print
    assert guard.changes(snap) == ["course_probe.helper"]


def test_removed_names_methods_and_closures_are_found(probe: tuple[types.ModuleType, guard.Snapshot]) -> None:
    """A name removed, a class's method replaced, and what a closure holds changed in place: each is named, in
    the snapshot's order."""
    module, snap = probe
    del module.helper
    module.State.step = lambda self: 3
    module.count.__closure__[0].cell_contents = [1, 2]
    assert guard.changes(snap) == ["what course_probe.count holds", "course_probe.helper",
                                   "course_probe.State.step"]


def test_a_planted_key_never_runs_its_own_code(probe: tuple[types.ModuleType, guard.Snapshot]) -> None:
    """A key whose type is a `str` of the learner's, hashed as a guarded name, is never hashed or compared by the
    guard (its code could act inside the notary), while a rebinding beside it is found."""
    module, snap = probe
    ran: list[str] = []

    class Sly(str):
        def __hash__(self) -> int:
            ran.append("hash")
            return hash("helper")

        def __eq__(self, other: object) -> bool:
            ran.append("eq")
            return self is other

    vars(module)[Sly("helper")] = "planted"  # a key of its own beside `helper`, which stays as it was
    ran.clear()
    module.count = lambda: 0
    assert guard.changes(snap) == ["course_probe.count"]
    assert guard.changes(snap) == ["course_probe.count"]
    assert ran == []


def test_a_compile_listener_removed_is_found() -> None:
    """The compile listeners of `jax.monitoring` are part of the machinery: one removed is named."""
    from jax._src import monitoring

    listener = lambda *args, **kwargs: None  # noqa: E731 - a listener of nothing
    monitoring.register_event_duration_secs_listener(listener)
    try:
        snap = guard.answering(guard.snapshot([]))
        assert guard.changes(snap) == []
        monitoring._event_duration_secs_listeners.remove(listener)
        assert guard.changes(snap) == ["jax monitoring's _event_duration_secs_listeners"]
    finally:
        if listener in monitoring._event_duration_secs_listeners:
            monitoring._event_duration_secs_listeners.remove(listener)
