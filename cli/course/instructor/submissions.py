"""One student's submission (an entry), and the file it holds for each exercise.

An entry is made of sources: a folder, a zip, or single files (Moodle and Canvas name each
downloaded file after its student, so one student's files lie side by side with a classmate's).
What the sources hold is a workspace (files at `exercises/NN_name/name.py`) or loose files named
`name.py`, anywhere inside; a zip found in a folder, among a student's files or inside another zip
(up to MAX_NESTING deep) is read too, its members listed under its own name. A missing file means
"not tried"; an archive that cannot be read, at any depth, is named (`Entry.unreadable`), so that
its student's row says so and the run does not end as if everything was graded.

Nothing is ever extracted or followed: a zip's members are read by name (a zip inside a zip in
memory, within MAX_INNER_BYTES), a folder's files are opened without following links, so an entry
cannot point at a classmate's files or outside its own.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from course.instructor.archives import (
    MAX_FILE_BYTES,
    MAX_INNER_BYTES,
    UNREADABLE,
    TooLarge,
    zip_members,
    zip_read,
)
from course.registry import Exercise

STUDENT_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.@+-]{0,99}$")
"""A student's id: letters, digits and `_ . @ + -` (it names their folder of results)."""
RESERVED = {"gradebook.csv", "summary.json", "report.html"}
"""Names the output folder uses for itself, so no student may be called that."""
SKIPPED_DIRS = {"__MACOSX", "__pycache__", "node_modules", "site-packages"}
MAX_NESTING = 3
"""A zip inside a zip is read up to this many zips deep; one deeper is named as not read."""
OTHER_ARCHIVES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".7z", ".rar")
"""Archives a submission is never unpacked from: named, so that a student who sent one is told."""


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
    """Where one listed file lives: a file on disk, or a member of a zip on disk (`inside`: the members, outermost
    first, that are the zips it lies in, then its own)."""

    path: Path
    inside: tuple[str, ...] = ()


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

    def unreadable(self) -> list[str]:
        """What this entry holds that could not be read: a damaged zip, at any depth, or an archive of a kind that
        is never unpacked, one sentence each."""
        return self.listing()[1]

    def files(self) -> list[str]:
        """Every file inside, as POSIX paths relative to the entry."""
        return list(self.listing()[0])

    def read(self, rel: str, where: _Where) -> Found:
        """The bytes of the file at `rel`, or a note saying why it is not graded."""
        try:
            data = zip_read(where.path, where.inside, MAX_FILE_BYTES) if where.inside else _file_read(where.path)
        except TooLarge as exc:
            return Found(rel, None, f"{rel} is {exc.size} bytes, over the {MAX_FILE_BYTES} byte limit; not graded",
                         "too_large")
        except (*UNREADABLE, StopIteration) as exc:
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


def _skipped(rel: str) -> bool:
    """Files inside hidden folders and tool folders are not the student's work."""
    return any(part.startswith(".") or part in SKIPPED_DIRS for part in PurePosixPath(rel).parts[:-1])


def _source_files(source: Source, problems: list[str]) -> list[tuple[str, _Where]]:
    """The files one source holds; a zip among them is listed member by member, as are the zips inside it."""
    if source.rel:  # a single file of the entry (Moodle's and Canvas's flat downloads)
        files = [(source.rel, _Where(source.path))] if _regular(source.path) else []
    elif source.path.is_dir() and not source.path.is_symlink():
        files = [(rel, _Where(source.path / rel)) for rel in _folder_files(source.path)]
    else:  # a zip that is the whole entry (`check_zip` vetted it)
        return _archive(source.path, (), "", problems, 1)
    listed = []
    for rel, where in files:
        listed.append((rel, where))
        if not _skipped(rel):
            listed += _archived(where.path, (), rel, problems, 1)
    return listed


def _archived(path: Path, inside: tuple[str, ...], rel: str, problems: list[str],
              depth: int) -> list[tuple[str, _Where]]:
    """What the file at `rel` holds when it is an archive (listed under `rel/`); nothing for any other file. An
    archive that cannot be read, or is never unpacked, is one of `problems`."""
    lower = rel.lower()
    if lower.endswith(".zip"):
        if depth > MAX_NESTING:
            problems.append(f"{rel} lies inside {depth - 1} zips, more than are read (unzip it)")
            return []
        return _archive(path, inside, f"{rel}/", problems, depth)
    if lower.endswith(OTHER_ARCHIVES):
        problems.append(f"{rel} is a kind of archive that is never unpacked (send a .zip or the files)")
    return []


def _archive(path: Path, inside: tuple[str, ...], prefix: str, problems: list[str],
             depth: int) -> list[tuple[str, _Where]]:
    """The members of the zip `inside` leads to in the zip at `path`, each under `prefix`, and the members of the
    zips among them; a zip that cannot be read is one of `problems`."""
    try:
        members = zip_members(path, inside)
    except (*UNREADABLE, TooLarge) as exc:
        shown = prefix.rstrip("/") or path.name
        problems.append(f"{shown} is not a readable zip ({_reason(exc)})")
        return []
    listed = []
    for name, stored in members:
        listed.append((prefix + name, _Where(path, (*inside, stored))))
        if not _skipped(name):
            listed += _archived(path, (*inside, stored), prefix + name, problems, depth + 1)
    return listed


def _reason(exc: BaseException) -> str:
    """Why a zip could not be read, in a few words."""
    if isinstance(exc, TooLarge):
        return f"it is {exc.size} bytes, over the {MAX_INNER_BYTES} bytes a zip inside a zip may be"
    return str(exc) or type(exc).__name__


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
            raise TooLarge(size)
        return fh.read(MAX_FILE_BYTES + 1)


def usable_id(student: str) -> bool:
    """True when `student` may name a folder of results."""
    return bool(STUDENT_RE.match(student)) and student.lower() not in RESERVED


def untouched(exercise: Exercise, data: bytes | None) -> bool:
    """True when `data` is the exercise's stub as handed out: not tried, and not worth a grading. This is
    the runner's own rule (`course.stubs`); deciding it here spares the class a process per stub."""
    from course.stubs import untouched_data

    return untouched_data(exercise, data)

