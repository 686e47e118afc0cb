"""`course inspect`: what an exercise asks to be shown of the learner's code, and the run that shows it.

An exercise lists its sections in `exercise.toml` (`[inspect]`, see docs/authoring.md); each names
what to observe (`compiles`, `donation`, `kernels`, `refs`, `distributed`) and the example calls
to observe it on. The run itself happens in the grading process (`course.engine.parent.inspection`);
nothing here imports JAX, and nothing is recorded in the learner's progress.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from course import stubs
from course.errors import UsageError

if TYPE_CHECKING:
    from course.engine.parent.inspection import Inspection
    from course.engine.parent.isolation import Launcher
    from course.registry import Exercise
    from course.session import Session

NOT_STARTED = "not started: the stub still raises NotImplementedError; write your code, then inspect it"


def sections_of(exercise: Exercise) -> list[dict[str, Any]]:
    """The sections to observe, as the grading process takes them: each with its index and its whole setup."""
    table = exercise.meta.inspect or {}
    shared = str(table.get("setup") or "")
    found = []
    for i, section in enumerate(table.get("sections") or []):
        setup = "\n".join(part for part in (shared, str(section.get("setup") or "")) if part.strip())
        found.append({"index": i, "show": section["show"], "note": section.get("note", ""), "setup": setup,
                      "calls": list(section["calls"])})
    return found


def run(session: Session, exercise: Exercise, *, worker: Launcher | None = None) -> Inspection:
    """Inspect the learner's file for `exercise` in an isolated grading process."""
    from course.engine.parent.inspection import Inspection, inspect

    sections = sections_of(exercise)
    if not sections:
        raise UsageError(f"`{exercise.name}` has nothing to inspect: its exercise.toml lists no [inspect] "
                         "sections (docs/authoring.md says how to add them).")
    path = session.submission(exercise)
    if stubs.untouched(exercise, path):
        return Inspection(exercise.name, "failed", message=NOT_STARTED, not_tried=True)
    return inspect(exercise, path, sections, cache_dir=session.paths.cache, worker=worker)


def choose(session: Session, name: str | None) -> Exercise:
    """The exercise to inspect: the one named, else the current one (the first not passed)."""
    if name:
        return session.exercise(name)
    current = session.current()
    if current is None:
        raise UsageError("every exercise passes; name the one to inspect: `course inspect NAME`.")
    return current


def as_json(session: Session, found: Inspection) -> dict[str, Any]:
    """The `course inspect --json` object."""
    from importlib import metadata

    try:
        version = metadata.version("jax")
    except metadata.PackageNotFoundError:
        version = "unknown"
    return {"course": session.course.meta.title, "jax_version": version, **found.to_json()}
