"""The course registry: `course.toml` and each `exercise.toml`, validated; every path derived from a name."""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from course.errors import RegistryError, UnknownExercise

FORMAT_VERSION = 1
NAME_RE = re.compile(r"^[a-z0-9_]{1,40}$")
COURSE_FILE = "course.toml"


class CourseMeta(BaseModel):
    """`course.toml`: the course's title, its ordered exercises and its messages."""

    model_config = ConfigDict(extra="forbid")

    format_version: int = FORMAT_VERSION
    """Version of this file's layout; a newer one needs a newer `course`."""
    title: str = Field(min_length=1)
    """The course's title, shown at the top of `course list`."""
    exercises: list[str]
    """Exercise names in the order learners meet them; `NN` in folder names is the position."""
    welcome: str = ""
    """Shown once by `course` before the first check."""
    final: str = ""
    """Shown when every exercise has passed."""

    @field_validator("exercises")
    @classmethod
    def _names(cls, names: list[str]) -> list[str]:
        """Names are unique, `[a-z0-9_]`, at most 40 characters."""
        for name in names:
            if not NAME_RE.match(name):
                raise ValueError(f"`{name}` is not a valid name (use a-z, 0-9 and _, at most 40)")
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"`{dupes[0]}` is listed twice")
        return names


class ExerciseMeta(BaseModel):
    """`exercises/NN_name/exercise.toml`: what the learner sees and how the grader runs."""

    model_config = ConfigDict(extra="forbid")

    title: str = Field(min_length=1)
    """One line naming the exercise's idea."""
    topic: str = Field(min_length=1)
    """Short topic shown in `course list` (e.g. `donation`)."""
    hints: list[str] = []
    """Hints from a nudge to nearly the answer, shown one level at a time."""
    timeout_s: Annotated[float, Field(gt=0, le=3600)] = 60
    """Wall-clock limit for the whole grading process."""
    devices: Annotated[int, Field(ge=1, le=64)] = 1
    """CPU devices the grader needs (`--xla_force_host_platform_device_count`)."""
    memory_mb: Annotated[int, Field(ge=256, le=65536)] = 4096
    """Limit on the grading process's memory, in MiB."""


@dataclass(frozen=True)
class Exercise:
    """One exercise: its name, position and metadata, with every path derived from them."""

    name: str
    position: int
    meta: ExerciseMeta
    root: Path

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

    def grader_hash(self) -> str:
        """A hash of the grader and metadata: a pass against another hash is stale."""
        digest = hashlib.sha256()
        for path in (self.grader_path, self.meta_path):
            digest.update(path.read_bytes() if path.exists() else b"")
        return digest.hexdigest()[:16]


@dataclass
class Course:
    """A loaded course: its root folder, metadata and exercises in order."""

    root: Path
    meta: CourseMeta

    @cached_property
    def exercises(self) -> list[Exercise]:
        """All exercises, in course order, each with its validated metadata."""
        return [self._load(i, name) for i, name in enumerate(self.meta.exercises, start=1)]

    def _load(self, position: int, name: str) -> Exercise:
        """Load one exercise's metadata; a missing or bad file is a RegistryError."""
        path = self.root / "exercises" / f"{position:02d}_{name}" / "exercise.toml"
        meta = _validate(ExerciseMeta, load_toml(path), path)
        return Exercise(name=name, position=position, meta=meta, root=self.root)

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
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise RegistryError(f"{path} is missing; every exercise in course.toml needs one.") from None
    except tomllib.TOMLDecodeError as exc:
        raise RegistryError(f"{path} is not valid TOML ({exc}); fix the file and try again.") from None


def _validate(model: type[BaseModel], data: dict[str, Any], path: Path) -> Any:
    """Validate `data` against `model`; the first problem becomes one sentence naming file and field."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "(top level)"
        reason = err["msg"][0].lower() + err["msg"][1:]
        if err["type"] == "extra_forbidden":
            reason = "is not a known field"
        raise RegistryError(f"{path}: field `{field}` {reason}; fix it and try again.") from None


def load_course(root: Path) -> Course:
    """Load `course.toml` at `root` (exercise metadata is loaded when first needed)."""
    path = root / COURSE_FILE
    meta = _validate(CourseMeta, load_toml(path), path)
    if meta.format_version > FORMAT_VERSION:
        raise RegistryError(f"{path} needs a newer `course` (format {meta.format_version}); upgrade it.")
    return Course(root=root, meta=meta)
