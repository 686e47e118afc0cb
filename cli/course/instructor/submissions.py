"""A class's submissions: one entry per student (a folder or a `.zip`), and the file each holds per exercise.

An entry is a workspace (files at `exercises/NN_name/name.py`) or loose files named `name.py`
anywhere inside it; a missing file means "not tried". Nothing is ever extracted or followed:
a zip's members are read by name, a folder's files are opened without following links, so an
entry cannot point at a classmate's files or outside its own.
"""

from __future__ import annotations

import os
import re
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from course.errors import UsageError
from course.registry import Exercise

STUDENT_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.@+-]{0,99}$")
"""A student's id: the entry's name without `.zip`; letters, digits and `_ . @ + -`."""
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

    @property
    def tried(self) -> bool:
        """True when there is a file to grade."""
        return self.data is not None


@dataclass(frozen=True)
class Entry:
    """One student's submission: a folder or a zip of one."""

    student: str
    path: Path

    @property
    def is_zip(self) -> bool:
        """True for a `.zip` entry."""
        return self.path.suffix.lower() == ".zip"

    def files(self) -> list[str]:
        """Every regular file inside, as a POSIX path relative to the entry (no links, no tool folders)."""
        names = _zip_files(self.path) if self.is_zip else _folder_files(self.path)
        return sorted(n for n in names if not _skipped(n))

    def read(self, rel: str) -> Found:
        """The bytes of the file at `rel`, or a note saying why it is not graded."""
        try:
            data = _zip_read(self.path, rel) if self.is_zip else _folder_read(self.path, rel)
        except _TooLarge as exc:
            return Found(rel, None, f"{rel} is {exc.size} bytes, over the {MAX_FILE_BYTES} byte limit; not graded")
        except (OSError, RuntimeError, zipfile.BadZipFile, ValueError) as exc:
            return Found(rel, None, f"{rel} could not be read ({exc}); not graded")
        return Found(rel, data)

    def locate(self, exercises: list[Exercise]) -> dict[str, Found]:
        """The file this entry holds for each exercise (`Found(None)` when it holds none)."""
        files = self.files()
        return {e.name: self._one(e, files) for e in exercises}

    def _one(self, exercise: Exercise, files: list[str]) -> Found:
        """The course's own path first, then that path in a folder of the entry, then any `name.py`."""
        own = exercise.stub_rel.as_posix()
        nested = [f for f in files if f.endswith("/" + own)]
        loose = [f for f in files if PurePosixPath(f).name == f"{exercise.name}.py"]
        for candidates in ([f for f in files if f == own], nested, loose):
            if candidates:
                chosen = min(candidates, key=lambda f: (f.count("/"), f))
                found = self.read(chosen)
                if len(candidates) > 1 and found.tried:
                    found = Found(found.rel, found.data, f"several files could be {exercise.name}.py; graded {chosen}")
                return found
        return Found(None)


class _TooLarge(Exception):
    """A file over MAX_FILE_BYTES."""

    def __init__(self, size: int) -> None:
        """Remember the size that was found."""
        super().__init__(size)
        self.size = size


def _skipped(rel: str) -> bool:
    """Files inside hidden folders and tool folders are not the student's work."""
    return any(part.startswith(".") or part in SKIPPED_DIRS for part in PurePosixPath(rel).parts[:-1])


def _folder_files(root: Path) -> list[str]:
    """Regular files under `root`, never following a link."""
    found = []
    for folder, dirs, names in os.walk(root, followlinks=False):
        dirs[:] = [d for d in dirs if not (Path(folder) / d).is_symlink()]
        for name in names:
            path = Path(folder) / name
            if stat.S_ISREG(path.lstat().st_mode):
                found.append(path.relative_to(root).as_posix())
    return found


def _folder_read(root: Path, rel: str) -> bytes:
    """Read a file of a folder entry without following a link at its last step."""
    fd = os.open(root / rel, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size > MAX_FILE_BYTES:
            raise _TooLarge(size)
        return fh.read(MAX_FILE_BYTES + 1)


def _is_link(info: zipfile.ZipInfo) -> bool:
    """True for a member stored as a symbolic link."""
    return stat.S_ISLNK(info.external_attr >> 16)


def _zip_files(path: Path) -> list[str]:
    """Regular members of a zip, with normalised names (no absolute paths, no `..`)."""
    with zipfile.ZipFile(path) as archive:
        return [_clean(i.filename) for i in archive.infolist() if not i.is_dir() and not _is_link(i)]


def _clean(name: str) -> str:
    """A member's name as a relative POSIX path without `.` or `..` parts."""
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".", "..")]
    return "/".join(parts)


def _zip_read(path: Path, rel: str) -> bytes:
    """The bytes of the member whose cleaned name is `rel`, refusing one larger than the limit."""
    with zipfile.ZipFile(path) as archive:
        info = next(i for i in archive.infolist() if _clean(i.filename) == rel and not _is_link(i))
        if info.file_size > MAX_FILE_BYTES:
            raise _TooLarge(info.file_size)
        with archive.open(info) as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
        if len(data) > MAX_FILE_BYTES:
            raise _TooLarge(len(data))
        return data


def entries(folder: Path, *, out: Path | None = None) -> list[Entry]:
    """The class in `folder`, one entry per student, checked; a bad entry is a UsageError naming it."""
    if not folder.is_dir():
        raise UsageError(f"{folder} is not a folder; give `course grade` the folder holding one entry per student.")
    found: dict[str, Entry] = {}
    for path in sorted(folder.iterdir()):
        if path.name.startswith(".") or (out is not None and path.resolve() == out.resolve()):
            continue
        entry = _entry(path)
        if entry.student in found:
            raise UsageError(f"{path} and {found[entry.student].path} are both student `{entry.student}`; keep one.")
        found[entry.student] = entry
    if not found:
        raise UsageError(f"{folder} holds no submissions; put one folder or .zip per student there.")
    return list(found.values())


def _entry(path: Path) -> Entry:
    """Check one entry: a folder or a readable zip, named by a valid student id."""
    is_zip = path.is_file() and path.suffix.lower() == ".zip"
    if not (path.is_dir() or is_zip):
        raise UsageError(f"{path} is neither a folder nor a .zip; each entry is one student's submission.")
    student = path.stem if is_zip else path.name
    if not STUDENT_RE.match(student) or student.lower() in RESERVED:
        raise UsageError(f"{path} is not named by a usable student id (letters, digits and _ . @ + -); rename it.")
    if is_zip:
        try:
            with zipfile.ZipFile(path) as archive:
                count = len(archive.infolist())
        except (zipfile.BadZipFile, OSError) as exc:
            raise UsageError(f"{path} is not a readable zip file ({exc}); replace or remove it.") from None
        if count > MAX_MEMBERS:
            raise UsageError(f"{path} holds {count} files, more than {MAX_MEMBERS}; it is not a submission.")
    return Entry(student, path)
