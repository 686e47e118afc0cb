"""Where the course and the learner's files are: finding them, making a workspace, restoring stubs."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from course.errors import CourseError, UsageError
from course.files import write_atomic, write_new
from course.paths import WorkspacePaths, marker_rel
from course.registry import COURSE_FILE, Course, Exercise, load_course


@dataclass
class Context:
    """The course being taken and the workspace holding the learner's files."""

    course: Course
    workspace: Path

    @property
    def paths(self) -> WorkspacePaths:
        """The files `course` keeps in this workspace."""
        return WorkspacePaths(self.workspace)

    def submission(self, exercise: Exercise) -> Path:
        """The learner's file for `exercise` in this workspace."""
        return self.workspace / exercise.stub_rel


def resolve(course_dir: Path | None = None, workspace_dir: Path | None = None, cwd: Path | None = None) -> Context:
    """Find the course and workspace in the order SPEC §4 gives."""
    cwd = (cwd or Path.cwd()).resolve()
    workspace_dir = workspace_dir or _env_path("COURSE_WORKSPACE") or _marked_workspace(cwd)
    root = _find_course(course_dir or _env_path("COURSE_ROOT"), cwd, workspace_dir)
    course = load_course(root)
    workspace = (workspace_dir or root).resolve()
    if not workspace.is_dir():
        raise UsageError(f"the workspace {workspace} does not exist; `course init {workspace}` makes one.")
    return Context(course=course, workspace=workspace)


def _env_path(name: str) -> Path | None:
    """A path from an environment variable, if set."""
    value = os.environ.get(name)
    return Path(value) if value else None


def _marked_workspace(cwd: Path) -> Path | None:
    """The nearest folder upward made by `course init`."""
    for folder in (cwd, *cwd.parents):
        if (folder / marker_rel()).is_file():
            return folder
    return None


def _find_course(explicit: Path | None, cwd: Path, workspace: Path | None) -> Path:
    """--course, then the nearest course.toml upward, then the workspace's record, then the install."""
    if explicit is not None:
        if not (explicit / COURSE_FILE).is_file():
            raise UsageError(f"{explicit} holds no {COURSE_FILE}; pass the folder of the course with --course.")
        return explicit.resolve()
    for folder in (cwd, *cwd.parents):
        if (folder / COURSE_FILE).is_file():
            return folder
    recorded = _recorded_course(workspace)
    if recorded is not None:
        return recorded
    installed = Path(__file__).resolve().parents[2]
    if (installed / COURSE_FILE).is_file():
        return installed
    raise UsageError(f"no {COURSE_FILE} found here or above; run `course` inside the course, or pass --course DIR.")


def _recorded_course(workspace: Path | None) -> Path | None:
    """The course a workspace was made from, as `course init` recorded it."""
    marker = WorkspacePaths(workspace).marker if workspace is not None else None
    if marker is None or not marker.is_file():
        return None
    try:
        text = marker.read_text(encoding="utf-8")
    except OSError:
        return None
    path = Path(_marked_course(text))
    return path if (path / COURSE_FILE).is_file() else None


def _marked_course(text: str) -> str:
    """The `course = "..."` that `init` writes, read without a TOML parser when it is as written."""
    key, _, value = text.strip().partition("=")
    value = value.strip()
    if key.strip() == "course" and len(value) > 1 and value[0] == value[-1] == '"' and '"' not in value[1:-1] \
            and "\\" not in value:
        return value[1:-1]
    import tomllib  # edited by hand: let the real parser say what it holds

    try:
        return str(tomllib.loads(text).get("course", ""))
    except tomllib.TOMLDecodeError:
        return ""


def init(course: Course, target: Path) -> list[Path]:
    """Make `target` a workspace holding the stubs; existing files are never overwritten."""
    target = target.resolve()
    if target.exists() and not target.is_dir():
        raise UsageError(f"{target} is a file; give `course init` a folder.")
    from course.stubs import handed_out  # imported here: it brings subprocess, which `course list` never needs

    made = []
    for exercise in course.exercises:
        dest = target / exercise.stub_rel
        if not dest.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            stub = handed_out(exercise)
            dest.write_bytes(stub if stub is not None else exercise.stub_path.read_bytes())
            made.append(dest)
    write_atomic(WorkspacePaths(target).marker, f'course = "{course.root.as_posix()}"\n')
    return made


def reset(context: Context, exercise: Exercise) -> Path | None:
    """Restore the stub; the learner's differing file is first copied to the workspace's backups."""
    from course.stubs import LOCK, handed_out  # imported here, as in `init`

    dest = context.submission(exercise)
    stub = handed_out(exercise, in_place=dest.resolve() == exercise.stub_path.resolve())
    if stub is None:
        raise UsageError(
            f"the original stub of `{exercise.name}` cannot be found: its file is not the stub "
            f"{LOCK.as_posix()} records and no commit of the course holds that stub; restore it from your "
            "copy of the course."
        )
    backup = None
    if dest.exists() and dest.read_bytes() != stub:
        backup = _keep_backup(context.paths.backups, exercise.name, dest)
    write_atomic(dest, stub)
    return backup


def is_stub_now(context: Context, exercise: Exercise) -> bool:
    """True when the learner's file holds the stub as the course hands it out: resetting it keeps no backup."""
    dest = context.submission(exercise)
    try:
        return _is_stub(exercise, dest, dest.read_bytes())
    except OSError:
        return False


def restore(context: Context, exercise: Exercise) -> tuple[Path, Path | None]:
    """Put the latest backup of `exercise` back in place; the file it replaces is kept first, unless
    it is the untouched stub. Returns (the backup restored, the new backup of the replaced file)."""
    found = backups(context, exercise)
    if not found:
        raise UsageError(
            f"there is no backup of `{exercise.name}` to restore; `course reset` keeps one before it restores the stub."
        )
    latest, dest = found[-1], context.submission(exercise)
    data = latest.read_bytes()
    kept = None
    if dest.exists() and (current := dest.read_bytes()) != data and not _is_stub(exercise, dest, current):
        kept = _keep_backup(context.paths.backups, exercise.name, dest)
    write_atomic(dest, data)
    return latest, kept


def backups(context: Context, exercise: Exercise) -> list[Path]:
    """The kept versions of the learner's file for `exercise`, oldest first."""
    folder = context.paths.backups
    return sorted(folder.glob(f"{exercise.name}.*.py")) if folder.is_dir() else []


def _is_stub(exercise: Exercise, dest: Path, data: bytes) -> bool:
    """True when `data` is the stub as the course hands it out (no need to keep a copy)."""
    from course.stubs import is_handed_out  # imported here, as in `init`

    return is_handed_out(exercise, data, in_place=dest.resolve() == exercise.stub_path.resolve())


def _keep_backup(folder: Path, name: str, source: Path) -> Path:
    """Copy the learner's file into the backups `folder` and make sure it is on disk before the
    stub replaces it; if that fails, the learner's file is left as it is."""
    import shutil  # imported here: plain `course list` never needs it
    from datetime import datetime

    data = source.read_bytes()
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S-%f")
    backup = folder / f"{name}.{stamp}.py"
    try:
        write_new(backup, data)  # never overwrites an earlier backup
    except OSError as exc:
        raise CourseError(
            f"could not keep a backup of your file in {backup.parent} ({exc.strerror or exc}), so it was "
            "left unchanged; fix that folder, or copy your file elsewhere, then reset again."
        ) from None
    shutil.copystat(source, backup)
    return backup
