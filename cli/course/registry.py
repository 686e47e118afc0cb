"""The course registry: `course.toml` and each `exercise.toml`, validated; every path derived from a name.

Validation is pydantic's (`course.schema`); its result, with each grader's points read
statically (`course.points`), is memoized in the course's `.course/registry.json` under a hash
of the files' bytes, so commands that only read (`course list`) skip importing pydantic until a
file changes. Each exercise's grader hash is computed here, once per command.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import tomllib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from course.errors import RegistryError, UnknownExercise
from course.files import write_atomic
from course.paths import registry_memo
from course.points import static_points
from course.schema_names import NAME_RE

FORMAT_VERSION = 1
COURSE_FILE = "course.toml"
# The schema's own source is part of the hash, so changing a default or a rule invalidates the memo.
_SCHEMA_TAG = (Path(__file__).with_name("schema.py")).read_bytes()

__all__ = ["COURSE_FILE", "NAME_RE", "Course", "CourseMeta", "Exercise", "ExerciseMeta", "load_course", "load_toml"]


@dataclass(frozen=True)
class CourseMeta:
    """`course.toml` after validation."""

    title: str
    exercises: list[str]
    format_version: int = FORMAT_VERSION
    welcome: str = ""
    final: str = ""


@dataclass(frozen=True)
class ExerciseMeta:
    """An `exercise.toml` after validation (fields documented in `course.schema.ExerciseFile`)."""

    title: str
    topic: str
    hints: list[str] = field(default_factory=list)
    timeout_s: float = 60
    devices: int = 1
    memory_mb: int = 4096
    inspect: dict[str, Any] | None = None


@dataclass(frozen=True)
class Exercise:
    """One exercise: its name, position and metadata, with every path derived from them."""

    name: str
    position: int
    meta: ExerciseMeta
    root: Path
    grader_hash: str = ""
    """A hash of the grader and metadata: a pass recorded against another hash is stale."""
    max_score: float | None = None
    """The grader's points, read statically; None when they cannot be (`course validate` says why)."""
    hidden_max_score: float | None = 0.0
    """The hidden grader's points, read the same way; 0 without a hidden grader."""

    @property
    def folder(self) -> str:
        """`NN_name`, the folder name shared by exercises/, graders/ and solutions/."""
        return f"{self.position:02d}_{self.name}"

    @property
    def stub_rel(self) -> Path:
        """The learner's file, relative to a workspace or the course root."""
        return Path("exercises", self.folder, f"{self.name}.py")

    @property
    def stub_path(self) -> Path:
        """The pristine stub in the course."""
        return self.root / self.stub_rel

    @property
    def lesson_path(self) -> Path:
        """The lesson and task, in Markdown."""
        return self.root / "exercises" / self.folder / "README.md"

    @property
    def meta_path(self) -> Path:
        """This exercise's `exercise.toml`."""
        return self.root / "exercises" / self.folder / "exercise.toml"

    @property
    def grader_path(self) -> Path:
        """The hidden pytest grader."""
        return self.root / "graders" / self.folder / f"test_{self.name}.py"

    @property
    def solution_path(self) -> Path:
        """The reference solution."""
        return self.root / "solutions" / self.folder / f"{self.name}.py"

    @property
    def wrong_dir(self) -> Path:
        """Known-wrong variants that the grader must catch."""
        return self.root / "solutions" / self.folder / "wrong"

    @property
    def hidden_grader_path(self) -> Path:
        """Checks run only when instructors grade, never by `course check`."""
        return _grader_path(self.root, self.position, self.name, hidden=True)


@dataclass
class Course:
    """A loaded course: its root folder, metadata and exercises in order."""

    root: Path
    meta: CourseMeta
    exercise_metas: dict[str, ExerciseMeta]

    graders: dict[str, tuple[str, float | None, float | None]] = field(default_factory=dict)
    """Per exercise: its grader hash, its points and its hidden points, as `load_course` found them."""

    @cached_property
    def exercises(self) -> list[Exercise]:
        """All exercises, in course order."""
        return [
            Exercise(name, i, self.exercise_metas[name], self.root, *self.graders.get(name, ("", None, 0.0)))
            for i, name in enumerate(self.meta.exercises, start=1)
        ]

    def get(self, name: str) -> Exercise:
        """The exercise called `name`, or UnknownExercise."""
        for exercise in self.exercises:
            if exercise.name == name:
                return exercise
        raise UnknownExercise(name)

    def select(self, names: list[str]) -> list[Exercise]:
        """The named exercises in course order; an unknown name is a usage error."""
        wanted = {self.get(n).name for n in names}
        return [e for e in self.exercises if e.name in wanted]


def load_toml(path: Path) -> dict[str, Any]:
    """Parse a TOML file; a missing or malformed one is a RegistryError naming it."""
    try:
        return tomllib.loads(_read(path).decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise RegistryError(f"{path} is not valid TOML ({exc}); fix the file and try again.") from None


def _read(path: Path) -> bytes:
    """A registry file's bytes; a missing one is a RegistryError naming it."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise RegistryError(f"{path} is missing; every exercise in course.toml needs one.") from None
    except OSError as exc:
        raise RegistryError(f"{path} cannot be read ({exc.strerror}).") from None


def _read_or_empty(path: Path) -> bytes:
    """A file's bytes for hashing; a missing file hashes as empty and fails validation later."""
    try:
        return path.read_bytes()
    except OSError:
        return b""


def _meta_path(root: Path, position: int, name: str) -> Path:
    """Where exercise `name` at `position` keeps its exercise.toml."""
    return root / "exercises" / f"{position:02d}_{name}" / "exercise.toml"


def load_course(root: Path) -> Course:
    """Load and validate `course.toml` and every listed `exercise.toml` at `root`."""
    course_bytes = _read(root / COURSE_FILE)
    names = _listed_names(root, course_bytes)
    metas = [_read_or_empty(_meta_path(root, i, n)) for i, n in enumerate(names, start=1)]
    graders = [_read_or_empty(_grader_path(root, i, n)) for i, n in enumerate(names, start=1)]
    hidden = [_read_or_empty(_grader_path(root, i, n, hidden=True)) for i, n in enumerate(names, start=1)]
    digest = hashlib.sha256(_SCHEMA_TAG)
    for part in [course_bytes, *metas, *graders, *hidden]:
        digest.update(hashlib.sha256(part).digest())
    cached = _cache_read(root, digest.hexdigest())
    if cached is None:
        cached = _validate_all(root)
        cached["points"] = {n: _points(g) for n, g in zip(names, graders, strict=True)}
        cached["hidden_points"] = {n: _points(h) if h else 0.0 for n, h in zip(names, hidden, strict=True)}
        _cache_write(root, digest.hexdigest(), cached)
    course_meta = CourseMeta(**cached["course"])
    exercise_metas = {name: ExerciseMeta(**data) for name, data in cached["exercises"].items()}
    hashes = {n: _grader_hash(g, m) for n, g, m in zip(names, graders, metas, strict=True)}
    info = {n: (hashes[n], cached["points"].get(n), cached["hidden_points"].get(n)) for n in course_meta.exercises}
    return Course(root=root, meta=course_meta, exercise_metas=exercise_metas, graders=info)


def _grader_hash(grader: bytes, meta: bytes) -> str:
    """A short hash of an exercise's grader and metadata."""
    digest = hashlib.sha256()
    for part in (grader, meta):
        digest.update(part)
    return digest.hexdigest()[:16]


def _grader_path(root: Path, position: int, name: str, *, hidden: bool = False) -> Path:
    """Where exercise `name` at `position` keeps its grader (or its hidden grader)."""
    folder = root / "graders" / f"{position:02d}_{name}"
    return folder / "hidden" / f"test_{name}_hidden.py" if hidden else folder / f"test_{name}.py"


def _points(grader: bytes) -> float | None:
    """A grader's points, read from its source."""
    return static_points(grader.decode("utf-8", "replace"))


def _listed_names(root: Path, course_bytes: bytes) -> list[str]:
    """The exercise names course.toml lists, if it parses well enough to say."""
    try:
        names = tomllib.loads(course_bytes.decode("utf-8")).get("exercises", [])
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        return []
    return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []


def _validate_all(root: Path) -> dict[str, Any]:
    """Validate every registry file with pydantic; the first problem is a RegistryError."""
    from course import schema

    path = root / COURSE_FILE
    course = schema.validate(schema.CourseFile, load_toml(path), str(path))
    if course["format_version"] > FORMAT_VERSION:
        raise RegistryError(f"{path} needs a newer `course` (format {course['format_version']}); upgrade it.")
    exercises = {}
    for i, name in enumerate(course["exercises"], start=1):
        meta_path = _meta_path(root, i, name)
        exercises[name] = schema.validate(schema.ExerciseFile, load_toml(meta_path), str(meta_path))
    return {"course": course, "exercises": exercises}


def _cache_read(root: Path, digest: str) -> dict[str, Any] | None:
    """Validated data for exactly these files' bytes, if memoized."""
    try:
        data = json.loads(registry_memo(root).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("digest") != digest:
        return None
    validated = data.get("validated")
    return validated if isinstance(validated, dict) and "hidden_points" in validated else None


def _cache_write(root: Path, digest: str, validated: dict[str, Any]) -> None:
    """Memoize validated data; a read-only course simply goes without."""
    with contextlib.suppress(OSError):
        write_atomic(registry_memo(root), json.dumps({"digest": digest, "validated": validated}))
