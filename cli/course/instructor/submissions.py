"""One student's submission (an entry), and the file it holds for each exercise.

An entry is made of sources: a folder, a zip, or single files (Moodle and Canvas name each
downloaded file after its student, so one student's files lie side by side with a classmate's).
What the sources hold is a workspace (files at `exercises/NN_name/name.py`) or loose files named
`name.py`, anywhere inside; a zip found in a folder or among a student's files is read one level
deep, its members listed under its own name. A missing file means "not tried".

Nothing is ever extracted or followed: a zip's members are read by name, a folder's files are
opened without following links, so an entry cannot point at a classmate's files or outside its own.
"""

from __future__ import annotations

import os
import re
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from course.registry import Exercise

STUDENT_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.@+-]{0,99}$")
"""A student's id: letters, digits and `_ . @ + -` (it names their folder of results)."""
RESERVED = {"gradebook.csv", "summary.json", "report.html"}
"""Names the output folder uses for itself, so no student may be called that."""
MAX_FILE_BYTES = 1 << 20
MAX_MEMBERS = 10_000
SKIPPED_DIRS = {"__MACOSX", "__pycache__", "node_modules", "site-packages"}


@dataclass(frozen=True)
class Found:
    """What an entry holds for one exercise: the file's place in the entry and its bytes."""

    rel: str | None
    """Where the file sits in the entry (POSIX path), None when there is none: not tried."""
    data: bytes | None = None
    note: str = ""
    """Why a file that exists is not graded as it is (too large, unreadable), or which of several was taken."""
    cause: str = ""
    """`too_large` or `unreadable` when the file was found but cannot be graded."""

    @property
    def tried(self) -> bool:
        """True when there is a file to grade."""
        return self.data is not None


@dataclass(frozen=True)
class Source:
    """One part of an entry: a folder or a zip (its root is the entry's), or a single file named `rel`."""

    path: Path
    rel: str = ""


@dataclass(frozen=True)
class _Where:
    """Where one listed file lives: a file on disk, or a member of a zip on disk."""

    path: Path
    member: str | None = None


@dataclass(frozen=True)
class Entry:
    """One student's submission, as found in the class's folder."""

    student: str
    sources: tuple[Source, ...]
    label: str = ""
    """The entry's name in the submissions folder, for messages (a Moodle student's folder, say)."""
    name: str = ""
    """The student's name, where the export or the roster gives one."""
    members: tuple[str, ...] = ()
    """The other students of a group submission, who get the same scores."""

    @classmethod
    def of(cls, student: str, path: Path, **extra: object) -> Entry:
        """An entry made of one folder or one zip."""
        return cls(student, (Source(path),), label=path.name, **extra)  # type: ignore[arg-type]

    def listing(self) -> tuple[dict[str, _Where], list[str]]:
        """Every regular file inside, by its POSIX path in the entry (no links, no tool folders),
        and what could not be read."""
        found: dict[str, _Where] = {}
        problems: list[str] = []
        for source in self.sources:
            for rel, where in _source_files(source, problems):
                if not _skipped(rel):
                    found.setdefault(rel, where)
        return dict(sorted(found.items())), problems

    def files(self) -> list[str]:
        """Every file inside, as POSIX paths relative to the entry."""
        return list(self.listing()[0])

    def read(self, rel: str, where: _Where) -> Found:
        """The bytes of the file at `rel`, or a note saying why it is not graded."""
        try:
            data = _zip_read(where.path, where.member) if where.member is not None else _file_read(where.path)
        except _TooLarge as exc:
            return Found(rel, None, f"{rel} is {exc.size} bytes, over the {MAX_FILE_BYTES} byte limit; not graded",
                         "too_large")
        except (OSError, RuntimeError, zipfile.BadZipFile, ValueError, StopIteration) as exc:
            return Found(rel, None, f"{rel} could not be read ({exc}); not graded", "unreadable")
        return Found(rel, data)

    def locate(self, exercises: list[Exercise]) -> dict[str, Found]:
        """The file this entry holds for each exercise (`Found(None)` when it holds none)."""
        listing, problems = self.listing()
        return {e.name: self._one(e, listing, problems) for e in exercises}

    def _one(self, exercise: Exercise, listing: dict[str, _Where], problems: list[str]) -> Found:
        """The course's own path first, then that path in a folder of the entry, then any `name.py`."""
        own = exercise.stub_rel.as_posix()
        files = list(listing)
        nested = [f for f in files if f.endswith("/" + own)]
        loose = [f for f in files if PurePosixPath(f).name == f"{exercise.name}.py"]
        for candidates in ([f for f in files if f == own], nested, loose):
            if candidates:
                chosen = min(candidates, key=lambda f: (f.count("/"), f))
                found = self.read(chosen, listing[chosen])
                if len(candidates) > 1 and found.tried:
                    others = ", ".join(c for c in candidates if c != chosen)
                    found = Found(found.rel, found.data, f"several files could be {exercise.name}.py; graded "
                                                         f"{chosen}, not {others}")
                return found
        return Found(None, None, "; ".join(problems))


class _TooLarge(Exception):
    """A file over MAX_FILE_BYTES."""

    def __init__(self, size: int) -> None:
        """Remember the size that was found."""
        super().__init__(size)
        self.size = size


def _skipped(rel: str) -> bool:
    """Files inside hidden folders and tool folders are not the student's work."""
    return any(part.startswith(".") or part in SKIPPED_DIRS for part in PurePosixPath(rel).parts[:-1])


def _source_files(source: Source, problems: list[str]) -> list[tuple[str, _Where]]:
    """The files one source holds; a zip among them (not inside another zip) is listed member by member."""
    if source.rel:  # a single file of the entry (Moodle's and Canvas's flat downloads)
        files = [(source.rel, _Where(source.path))] if _regular(source.path) else []
    elif source.path.is_dir() and not source.path.is_symlink():
        files = [(rel, _Where(source.path / rel)) for rel in _folder_files(source.path)]
    else:
        return [(rel, _Where(source.path, member)) for rel, member in _zip_members(source.path)]
    listed = []
    for rel, where in files:
        listed.append((rel, where))
        if rel.lower().endswith(".zip") and not _skipped(rel):
            try:
                listed += [(f"{rel}/{name}", _Where(where.path, member)) for name, member in _zip_members(where.path)]
            except (OSError, zipfile.BadZipFile, ValueError) as exc:
                problems.append(f"{rel} could not be read as a zip ({exc})")
    return listed


def _regular(path: Path) -> bool:
    """True for a regular file that is not a link."""
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False


def _folder_files(root: Path) -> list[str]:
    """Regular files under `root`, never following a link."""
    found = []
    for folder, dirs, names in os.walk(root, followlinks=False):
        dirs[:] = [d for d in dirs if not (Path(folder) / d).is_symlink()]
        found += [(Path(folder) / n).relative_to(root).as_posix() for n in names if _regular(Path(folder) / n)]
    return found


def _file_read(path: Path) -> bytes:
    """Read a file without following a link at its last step, refusing one over the limit."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > MAX_FILE_BYTES:
            raise _TooLarge(size)
        return fh.read(MAX_FILE_BYTES + 1)


def _is_link(info: zipfile.ZipInfo) -> bool:
    """True for a member stored as a symbolic link."""
    return stat.S_ISLNK(info.external_attr >> 16)


def _zip_members(path: Path) -> list[tuple[str, str]]:
    """(cleaned name, stored name) of each regular member of a zip on disk (never a link)."""
    with zipfile.ZipFile(path) as archive:
        infos = archive.infolist()
        if len(infos) > MAX_MEMBERS:
            raise ValueError(f"it holds {len(infos)} files, more than {MAX_MEMBERS}")
        return [(_clean(i.filename), i.filename) for i in infos if not i.is_dir() and not _is_link(i)]


def _clean(name: str) -> str:
    """A member's name as a relative POSIX path without `.` or `..` parts."""
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".", "..")]
    return "/".join(parts)


def _zip_read(path: Path, member: str) -> bytes:
    """The bytes of one member of a zip, refusing one larger than the limit."""
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(member)
        if info.file_size > MAX_FILE_BYTES:
            raise _TooLarge(info.file_size)
        with archive.open(info) as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            raise _TooLarge(len(data))
        return data


def check_zip(path: Path) -> str:
    """Why a zip cannot be a submission ('' when it can): unreadable, or too many members."""
    try:
        _zip_members(path)
    except (zipfile.BadZipFile, OSError) as exc:
        return f"is not a readable zip file ({exc}); replace or remove it"
    except ValueError as exc:
        return f"is not a submission: {exc}"
    return ""


def usable_id(student: str) -> bool:
    """True when `student` may name a folder of results."""
    return bool(STUDENT_RE.match(student)) and student.lower() not in RESERVED


def untouched(exercise: Exercise, data: bytes | None) -> bool:
    """True when `data` is the exercise's stub as handed out: not tried, and not worth a grading. This is
    the runner's own rule (`course.stubs`); deciding it here spares the class a process per stub."""
    from course.stubs import untouched_data

    return untouched_data(exercise, data)

