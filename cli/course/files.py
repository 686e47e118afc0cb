"""Writing a file so that a crash or a concurrent reader never sees half of it."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def write_atomic(path: Path, data: bytes | str, *, keep_mode: bool = False) -> None:
    """Replace `path` with `data`: a temporary file in the same folder, flushed to disk, then renamed.

    With `keep_mode`, the new file gets the permissions of the one it replaces.
    """
    import tempfile  # imported here: `course list`, which only reads, never needs it

    raw = data.encode("utf-8") if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        if keep_mode and path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_new(path: Path, data: bytes, *, mode: int = 0o644) -> None:
    """Create `path` holding `data`, flushed to disk; FileExistsError if it exists (never overwrites)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def move_aside(path: Path, dest: Path) -> bool:
    """Rename `path` to `dest` in one step, replacing `dest`; False if that failed."""
    try:
        os.replace(path, dest)
    except OSError:
        return False
    return True
