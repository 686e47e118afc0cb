"""The course registry: `course.toml` and each `exercise.toml`, validated; every path derived from a name.

Validation is pydantic's (`course.schema`); its result, with each grader's points read
statically (`course.points`), is memoized in the course's `.course/registry.json` under a hash
of the files' bytes, so commands that only read (`course list`) skip importing pydantic until a
file changes. Each exercise's grader hash is computed here, once per command.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from course import memo
from course import names as naming
from course.errors import RegistryError, UnknownExercise
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
    parts: list[dict[str, str]] = field(default_factory=list)
    """Each part's `title` and `first` exercise (`course.schema.PartFile`)."""
    seed: int | None = None
    """The seed of graded runs, when the course sets one (`course.instructor.state.course_seed`)."""


@dataclass(frozen=True)
class ExerciseMeta:
    """An `exercise.toml` after validation (fields documented in `course.schema.ExerciseFile`)."""

    title: str
    topic: str
    hints: list[str] = field(default_factory=list)
    timeout_s: float = 60
    devices: int = 1
    processes: int = 1
    memory_mb: int = 4096
    inspect: dict[str, Any] | None = None
    wall_timeout_s: float | None = None
    check_timeout_s: float | None = None
    mutants: dict[str, Any] | None = None
    chip: dict[str, Any] | None = None


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

    def part_titles(self) -> dict[str, str]:
        """The heading each part's first exercise comes under, by that exercise's name."""
        return {part["first"]: part["title"] for part in self.meta.parts}

    def get(self, name: str) -> Exercise:
        """The exercise `name` names, as people type it (`course.names`), or UnknownExercise."""
        found = naming.resolve(self.exercises, name)
        if found is None:
            raise UnknownExercise(name, naming.closest(self.exercises, name), len(self.exercises))
        return found  # type: ignore[return-value]

    def select(self, names: list[str]) -> list[Exercise]:
        """The named exercises in course order; an unknown name is a usage error."""
        wanted = {self.get(n).name for n in names}
        return [e for e in self.exercises if e.name in wanted]


def load_toml(path: Path) -> dict[str, Any]:
    """Parse a TOML file; a missing or malformed one is a RegistryError naming it."""
    import tomllib  # imported here: a memoized course is read without parsing TOML

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
    """Load and validate `course.toml` and every listed `exercise.toml` at `root` (memoized: `course.memo`)."""
    stored = memo.load(root)
    schema = hashlib.sha256(_SCHEMA_TAG).hexdigest()
    if memo.unchanged(root, stored, schema):
        return _course(root, stored["validated"], stored["hashes"])
    course_bytes = _read(root / COURSE_FILE)
    names = _listed_names(root, course_bytes)
    places = [(_rel(i, n, "meta"), _rel(i, n, "grader"), _rel(i, n, "hidden")) for i, n in enumerate(names, start=1)]
    metas, graders, hidden = ([_read_or_empty(root / p[k]) for p in places] for k in range(3))
    digest = hashlib.sha256(_SCHEMA_TAG)
    for part in [course_bytes, *metas, *graders, *hidden]:
        digest.update(hashlib.sha256(part).digest())
    cached = stored.get("validated") if stored.get("digest") == digest.hexdigest() else None
    if cached is None:
        cached = _validate_all(root)
        cached["points"] = {n: _points(g) for n, g in zip(names, graders, strict=True)}
        cached["hidden_points"] = {n: _points(h) if h else 0.0 for n, h in zip(names, hidden, strict=True)}
    hashes = {n: _grader_hash(g, m) for n, g, m in zip(names, graders, metas, strict=True)}
    memo.save(root, {"digest": digest.hexdigest(), "schema": schema, "validated": cached, "hashes": hashes},
              [COURSE_FILE, *(rel for p in places for rel in p)])
    return _course(root, cached, hashes)


def _course(root: Path, validated: dict[str, Any], hashes: dict[str, str]) -> Course:
    """The Course made from validated data and the graders' hashes."""
    course_meta = CourseMeta(**validated["course"])
    exercise_metas = {name: ExerciseMeta(**data) for name, data in validated["exercises"].items()}
    info = {n: (hashes.get(n, ""), validated["points"].get(n), validated["hidden_points"].get(n))
            for n in course_meta.exercises}
    return Course(root=root, meta=course_meta, exercise_metas=exercise_metas, graders=info)


def _rel(position: int, name: str, kind: str) -> str:
    """Where an exercise keeps its metadata, grader or hidden grader, relative to the course."""
    folder = f"{position:02d}_{name}"
    return {"meta": f"exercises/{folder}/exercise.toml", "grader": f"graders/{folder}/test_{name}.py",
            "hidden": f"graders/{folder}/hidden/test_{name}_hidden.py"}[kind]


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
    from course.points import static_points  # imported here: only a changed grader is read again

    return static_points(grader.decode("utf-8", "replace"))


def _listed_names(root: Path, course_bytes: bytes) -> list[str]:
    """The exercise names course.toml lists, if it parses well enough to say."""
    import tomllib

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
