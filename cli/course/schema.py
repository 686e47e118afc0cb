"""The pydantic schemas of the files `course` reads and writes: course.toml, exercise.toml, progress.json.

Validation happens here and nowhere else. The rest of the engine works with the plain
dataclasses in `registry` and `progress`, so commands that only read validated data (`course
list`) need not import pydantic: the registry memoizes validation by content hash, and progress
entries carry signatures that prove they were written, already validated, by `course` itself.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from course import pyast
from course.errors import RegistryError
from course.schema_names import NAME_RE


class PartFile(BaseModel):
    """One part of the course: a heading in `course list` over a run of exercises."""

    model_config = ConfigDict(extra="forbid")

    title: str = Field(min_length=1)
    """The heading, e.g. `Part 1: buffers, refs, aliasing`."""
    first: str
    """The part's first exercise; it runs until the next part's first, or the end."""


class CourseFile(BaseModel):
    """`course.toml`: the course's title, its ordered exercises and its messages."""

    model_config = ConfigDict(extra="forbid")

    format_version: int = 1
    """Version of this file's layout; a newer one needs a newer `course`."""
    title: str = Field(min_length=1)
    """The course's title, shown at the top of `course list`."""
    exercises: list[str]
    """Exercise names in the order learners meet them; `NN` in folder names is the position."""
    welcome: str = ""
    """Shown by `course` before the first check."""
    final: str = ""
    """Shown when every exercise has passed."""
    parts: list[PartFile] = []
    """Headings in `course list`, in course order; exercises before the first part have none."""
    seed: int | None = Field(default=None, ge=0, lt=2**31)
    """The seed of every graded run (`course grade`, the autograders), so a regrade scores alike; by
    default one derived from the course. Kept out of the students' copy."""

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

    @field_validator("parts")
    @classmethod
    def _parts_in_order(cls, parts: list[PartFile], info: ValidationInfo) -> list[PartFile]:
        """Each part starts at a listed exercise, later than the part before it."""
        names, seen = info.data.get("exercises") or [], -1
        for part in parts:
            if part.first not in names:
                raise ValueError(f"part `{part.title}` starts at `{part.first}`, which `exercises` does not list")
            if names.index(part.first) <= seen:
                raise ValueError(f"part `{part.title}` must start after the part before it")
            seen = names.index(part.first)
        return parts


class InspectSection(BaseModel):
    """One section of `course inspect`: what to observe, and the example calls to observe it on."""

    model_config = ConfigDict(extra="forbid")

    show: Literal["compiles", "donation", "kernels", "refs", "distributed", "compiler"]
    """What the section shows (`course.grading.inspect.SECTIONS` says what each does)."""
    calls: list[str] = Field(min_length=1)
    """Example calls, one line of Python each, e.g. `update_with_donate(f32(1024), f32(1024))`."""
    setup: str = ""
    """Python run afresh before each call, after the table's own `setup`."""
    note: str = ""
    """One sentence shown above the section: what to look for."""

    @field_validator("calls")
    @classmethod
    def _one_line_each(cls, calls: list[str]) -> list[str]:
        """Each call is one statement of valid Python."""
        for call in calls:
            _python(call, single=True)
        return calls

    @field_validator("setup")
    @classmethod
    def _setup_parses(cls, setup: str) -> str:
        """The setup is valid Python."""
        _python(setup, single=False)
        return setup


class InspectTable(BaseModel):
    """`[inspect]` of an exercise.toml: the sections `course inspect` shows, in order."""

    model_config = ConfigDict(extra="forbid")

    setup: str = ""
    """Python run afresh before every call of every section (make a mesh, place inputs)."""
    sections: list[InspectSection] = []

    @field_validator("setup")
    @classmethod
    def _setup_parses(cls, setup: str) -> str:
        """The setup is valid Python."""
        _python(setup, single=False)
        return setup


class ChipTable(BaseModel):
    """`[chip]` of an exercise.toml: what a TPU runs of the learner's file (`course check` on a TPU, `course bench`)."""

    model_config = ConfigDict(extra="forbid")

    calls: list[str] = Field(min_length=1)
    """Calls `course check` makes on a TPU, compiled, and compares with the CPU's result (`course inspect`'s form)."""
    bench: list[str] = []
    """Calls at the lesson's sizes that `course bench` times, or estimates without a chip."""
    math: Literal["matmul", "attention", "double"] | None = None
    """The math of the kernel (`course.chip.maths`): XLA's op it is timed against, and its roofline."""
    setup: str = ""
    """Python run afresh before each call."""

    @field_validator("calls", "bench")
    @classmethod
    def _one_line_each(cls, calls: list[str]) -> list[str]:
        """Each call is one statement of valid Python."""
        for call in calls:
            _python(call, single=True)
        return calls

    @model_validator(mode="after")
    def _bench_needs_math(self) -> ChipTable:
        """Timing against XLA needs the math XLA is to do."""
        if self.bench and self.math is None:
            raise ValueError("`bench` calls need `math`, the op XLA is timed doing")
        return self


def _python(text: str, *, single: bool) -> None:
    """Raise ValueError naming the problem when `text` is not valid Python (one statement if `single`)."""
    try:
        tree = pyast.parse(text)
    except SyntaxError as exc:
        raise ValueError(f"`{text.strip()[:60]}` is not valid Python ({exc.msg})") from None
    if single and len(tree.body) != 1:
        raise ValueError(f"`{text.strip()[:60]}` should be one statement")


class EquivalentMutant(BaseModel):
    """One `[[mutants.equivalent]]`: a mutant that cannot change behaviour, matched by its diff."""

    model_config = ConfigDict(extra="forbid")

    diff: str = Field(min_length=1)
    """The mutant's diff as `course validate --mutants` prints it: `- old line` then `+ new line`."""
    reason: str = Field(min_length=1)
    """Why no program can tell this mutant from the solution (one sentence)."""
    operator: str = ""
    """Only mutants of this operator match (default: any)."""

    @field_validator("diff")
    @classmethod
    def _is_a_diff(cls, diff: str) -> str:
        """At least one line starts with `-` or `+`."""
        if not any(line.strip()[:1] in ("-", "+") for line in diff.splitlines() if line.strip()):
            raise ValueError("should hold the mutant's changed lines, each starting with `- ` or `+ `")
        return diff


class MutantRewrite(BaseModel):
    """One `[[mutants.replace]]`: an exercise's own operator, an expression rewritten to each alternative."""

    model_config = ConfigDict(extra="forbid")

    find: str = Field(min_length=1)
    """A Python expression as it appears in the solution, e.g. `pl.cdiv(n, bn)`."""
    to: list[str] = Field(min_length=1)
    """What it becomes in each mutant, e.g. `["n // bn"]`."""

    @field_validator("find")
    @classmethod
    def _find_parses(cls, find: str) -> str:
        """One expression."""
        _expression(find)
        return find

    @field_validator("to")
    @classmethod
    def _each_parses(cls, to: list[str]) -> list[str]:
        """Each alternative is one expression."""
        for text in to:
            _expression(text)
        return to


def _expression(text: str) -> None:
    """Raise ValueError when `text` is not one Python expression."""
    try:
        pyast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"`{text.strip()[:60]}` is not a Python expression ({exc.msg})") from None


class MutantsTable(BaseModel):
    """`[mutants]` of an exercise.toml: how `course validate --mutants` treats this exercise."""

    model_config = ConfigDict(extra="forbid")

    equivalent: list[EquivalentMutant] = []
    """Survivors that are no grader gap, each with its reason."""
    replace: list[MutantRewrite] = []
    """Rewrites of this exercise's own, beside the course's operators."""
    skip: list[str] = []
    """Operators not applied to this exercise (their names, as the report shows them)."""
    tiles: list[int] = []
    """The tile sizes the task allows, when it names them (e.g. `[128, 256]`): the `tile` operator then
    makes each of them each other one, and leaves every other constant alone."""

    @field_validator("tiles")
    @classmethod
    def _tiles_differ(cls, tiles: list[int]) -> list[int]:
        """Positive, distinct, and at least two (one tile leaves nothing to change it to)."""
        if tiles and (len(tiles) < 2 or len(set(tiles)) != len(tiles) or min(tiles) < 1):
            raise ValueError("should name two or more different positive tile sizes, e.g. [128, 256]")
        return tiles


class ExerciseFile(BaseModel):
    """`exercises/NN_name/exercise.toml`: what the learner sees and how the grader runs."""

    model_config = ConfigDict(extra="forbid")

    title: str = Field(min_length=1)
    """One line naming the exercise's idea."""
    topic: str = Field(min_length=1)
    """Short topic shown in `course list` (e.g. `donation`)."""
    hints: list[str] = []
    """Hints from a nudge to nearly the answer, shown one level at a time."""
    timeout_s: Annotated[float, Field(gt=0, le=3600)] = 60
    """CPU seconds a grading may use, counted over its whole process tree (what an endless loop burns)."""
    devices: Annotated[int, Field(ge=1, le=64)] = 1
    """CPU devices the grader needs (`--xla_force_host_platform_device_count`), in each process."""
    processes: Annotated[int, Field(ge=1, le=8)] = 1
    """Grading processes that run the grader together, joined by `jax.distributed` on the loopback
    (`course.engine.common.peers`); each has `devices` CPU devices and the limits below."""
    memory_mb: Annotated[int, Field(ge=256, le=65536)] = 4096
    """Limit on the grading process's resident memory, in MiB."""
    inspect: InspectTable | None = None
    """What `course inspect` shows of the learner's code (docs/authoring.md)."""
    wall_timeout_s: Annotated[float, Field(gt=0, le=36000)] | None = None
    """Wall-clock cap on a grading, in seconds, for waits that burn no CPU; default 5 × `timeout_s`."""
    check_timeout_s: Annotated[float, Field(gt=0, le=3600)] | None = None
    """CPU seconds one check may use, so that one loop does not cost the grading's whole `timeout_s`;
    default a third of `timeout_s`, at least 20 (never more than `timeout_s`)."""
    mutants: MutantsTable | None = None
    """How `course validate --mutants` treats this exercise: its equivalent mutants, its own rewrites."""
    chip: ChipTable | None = None
    """What a TPU runs of the learner's file: compiled and compared by `course check`, timed by `course bench`."""


class EntryFile(BaseModel):
    """One exercise's last graded result in progress.json."""

    model_config = ConfigDict(extra="forbid")

    status: Literal["passed", "failed", "not_tried"]
    score: float
    max_score: float
    last_checked: str
    grader_hash: str
    signature: str = ""
    passed_once: bool = False


class ProgressFile(BaseModel):
    """`.course/progress.json`."""

    model_config = ConfigDict(extra="forbid")

    version: int = 1
    exercises: dict[str, EntryFile] = {}


def validate(model: type[BaseModel], data: Any, where: str) -> dict[str, Any]:
    """Validate `data`; the first problem becomes one sentence naming the file and the field."""
    try:
        return model.model_validate(data).model_dump()
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "(top level)"
        reason = "is not a known field" if err["type"] == "extra_forbidden" else err["msg"][0].lower() + err["msg"][1:]
        raise RegistryError(f"{where}: field `{field}` {reason}; fix it and try again.") from None
