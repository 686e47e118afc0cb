"""The code the barrier trusts on a verdict's stack: noted once by a warm worker, the same as walked afresh."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator

import pytest

from course.engine.common import barrier

PREFIX = "course_trust_probe"


@pytest.fixture
def probe() -> Iterator[types.ModuleType]:
    """A trusted-looking module of our own, loaded for the test and gone after it, with the notes restored."""
    noted = dict(barrier._NOTED)
    module = types.ModuleType(PREFIX)
    exec("def first():\n    return lambda: 1\n", module.__dict__)  # noqa: S102 - a module made for the test
    sys.modules[PREFIX] = module
    yield module
    sys.modules.pop(PREFIX, None)
    barrier._NOTED.clear()
    barrier._NOTED.update(noted)


def test_noted_codes_are_the_codes_a_fresh_walk_finds(probe: types.ModuleType) -> None:
    """Noted before the fork or walked in the grading, the trusted code is the same, nested lambdas included."""
    barrier._NOTED.clear()
    walked = barrier.trusted_codes((PREFIX, "course.engine"))
    barrier.note_trusted_codes((PREFIX, "course.engine"))
    assert PREFIX in barrier._NOTED and barrier.trusted_codes((PREFIX, "course.engine")) == walked
    first = probe.first.__code__
    assert first in walked and any(c in walked for c in first.co_consts if isinstance(c, types.CodeType))


def test_a_module_loaded_again_after_the_note_is_walked_afresh(probe: types.ModuleType) -> None:
    """A note holds for the module object it was taken of: a module loaded again in its place is walked."""
    barrier.note_trusted_codes((PREFIX,))
    again = types.ModuleType(PREFIX)
    exec("def second():\n    return 2\n", again.__dict__)  # noqa: S102 - a module made for the test
    sys.modules[PREFIX] = again
    trusted = barrier.trusted_codes((PREFIX,))
    assert again.second.__code__ in trusted and probe.first.__code__ not in trusted
