"""Zips read by name, never extracted: a zip on disk, and the zips inside it, read in memory within limits.

What `course.instructor.submissions` reads a student's zips with. A member is found by its stored name and
read within a size limit; a zip inside a zip is read into memory (within MAX_INNER_BYTES) and opened there;
links are never members; what a damaged zip raises is one of UNREADABLE.
"""

from __future__ import annotations

import contextlib
import io
import stat
import zipfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["MAX_FILE_BYTES", "MAX_INNER_BYTES", "MAX_MEMBERS", "UNREADABLE", "TooLarge", "check_zip", "zip_members",
           "zip_read"]

MAX_FILE_BYTES = 1 << 20
"""A submitted file larger than this is not graded."""
MAX_MEMBERS = 10_000
MAX_INNER_BYTES = 64 << 20
"""A zip inside a zip is read into memory: at most this large."""
UNREADABLE = (OSError, RuntimeError, zipfile.BadZipFile, ValueError, EOFError, NotImplementedError)
"""What reading a damaged zip raises (a bad CRC, a member cut short, an unknown compression, a password)."""


class TooLarge(Exception):
    """A file (or a zip inside a zip) over the limit it is read within."""

    def __init__(self, size: int) -> None:
        """Remember the size that was found."""
        super().__init__(size)
        self.size = size


def _is_link(info: zipfile.ZipInfo) -> bool:
    """True for a member stored as a symbolic link."""
    return stat.S_ISLNK(info.external_attr >> 16)


@contextlib.contextmanager
def _opened(path: Path, inside: tuple[str, ...]) -> Iterator[zipfile.ZipFile]:
    """The zip at `path`, or the zip its members `inside` lead to, each read into memory within MAX_INNER_BYTES."""
    with zipfile.ZipFile(path) as archive:
        current = archive
        for stored in inside:
            data = _member_bytes(current, stored, MAX_INNER_BYTES)
            current = zipfile.ZipFile(io.BytesIO(data))
        yield current


def _member_bytes(archive: zipfile.ZipFile, stored: str, limit: int) -> bytes:
    """The bytes of one member, refusing one larger than `limit`."""
    info = archive.getinfo(stored)
    if info.file_size > limit:
        raise TooLarge(info.file_size)
    with archive.open(info) as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise TooLarge(len(data))
    return data


def zip_members(path: Path, inside: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """(cleaned name, stored name) of each regular member of a zip on disk, or of the zip `inside` leads to in it
    (never a link)."""
    with _opened(path, inside) as archive:
        infos = archive.infolist()
        if len(infos) > MAX_MEMBERS:
            raise ValueError(f"it holds {len(infos)} files, more than {MAX_MEMBERS}")
        return [(_clean(i.filename), i.filename) for i in infos if not i.is_dir() and not _is_link(i)]


def _clean(name: str) -> str:
    """A member's name as a relative POSIX path without `.` or `..` parts."""
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".", "..")]
    return "/".join(parts)


def zip_read(path: Path, inside: tuple[str, ...], limit: int) -> bytes:
    """The bytes of one member of a zip (the last of `inside`, in the zips the others lead to), refusing one
    larger than `limit`."""
    with _opened(path, inside[:-1]) as archive:
        return _member_bytes(archive, inside[-1], limit)


def check_zip(path: Path) -> str:
    """Why a zip cannot be a submission ('' when it can): unreadable, or too many members."""
    try:
        zip_members(path)
    except (zipfile.BadZipFile, OSError) as exc:
        return f"is not a readable zip file ({exc}); replace or remove it"
    except ValueError as exc:
        return f"is not a submission: {exc}"
    return ""
