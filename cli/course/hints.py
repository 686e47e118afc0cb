"""Hints revealed one level at a time; the level reached is kept in `.course/hints.json`."""

from __future__ import annotations

import json
import os
from pathlib import Path

from course.errors import UsageError
from course.registry import Exercise


def next_hint(workspace: Path, exercise: Exercise, level: int | None) -> tuple[int, int, str]:
    """(level shown, number of levels, text): the next unseen level, or the one asked for."""
    hints = exercise.meta.hints
    if not hints:
        raise UsageError(f"`{exercise.name}` has no hints; read the lesson with `course show {exercise.name}`.")
    path = workspace / ".course" / "hints.json"
    seen = _load(path)
    if level is None:
        level = min(seen.get(exercise.name, 0) + 1, len(hints))
    elif level > len(hints):
        raise UsageError(f"`{exercise.name}` has {len(hints)} hint levels; pick --level 1 to {len(hints)}.")
    seen[exercise.name] = max(seen.get(exercise.name, 0), level)
    _save(path, seen)
    return level, len(hints), hints[level - 1]


def _load(path: Path) -> dict[str, int]:
    """Levels seen so far; anything unreadable counts as none."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return (
        {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, int)} if isinstance(data, dict) else {}
    )


def _save(path: Path, seen: dict[str, int]) -> None:
    """Write atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".hints.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(seen, indent=2), encoding="utf-8")
    os.replace(tmp, path)
