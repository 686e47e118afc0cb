"""Hints revealed one level at a time; the level reached per exercise is kept in the workspace."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from course.errors import UsageError
from course.files import write_atomic
from course.registry import Exercise


@dataclass(frozen=True)
class Hint:
    """One hint shown: its level, how many levels there are, and its text."""

    exercise: str
    level: int
    levels: int
    text: str

    @property
    def last(self) -> bool:
        """True when no further level exists."""
        return self.level >= self.levels


def next_hint(path: Path, exercise: Exercise, level: int | None) -> Hint:
    """The next unseen level of `exercise`'s hints, or the level asked for; remembered in `path`."""
    hints = exercise.meta.hints
    if not hints:
        raise UsageError(f"`{exercise.name}` has no hints; read the lesson with `course show {exercise.name}`.")
    seen = _load(path)
    if level is None:
        level = min(seen.get(exercise.name, 0) + 1, len(hints))
    elif level > len(hints):
        raise UsageError(f"`{exercise.name}` has {len(hints)} hint levels; pick --level 1 to {len(hints)}.")
    seen[exercise.name] = max(seen.get(exercise.name, 0), level)
    write_atomic(path, json.dumps(seen, indent=2), private=True)
    return Hint(exercise.name, level, len(hints), hints[level - 1])


def _load(path: Path) -> dict[str, int]:
    """Levels seen so far; anything unreadable counts as none."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, int)}
