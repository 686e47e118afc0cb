"""Writing a file so that a crash or a concurrent reader never sees half of it."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def write_atomic(path: Path, data: bytes | str, *, keep_mode: bool = False, private: bool = False,
                 mode: int | None = None, durable: bool = True) -> None:
    """Replace `path` with `data`: a temporary file in the same folder, flushed to disk, then renamed.

    The new file gets the usual permissions (0666 less the umask), as any program's output does, so
    others may read what is meant for them; `private` makes it 0600 (progress, keys, caches), `mode`
    exactly that mode whatever the umask. With `keep_mode`, it gets the permissions of the file it replaces.
    Without `durable`, nothing is flushed to disk: a reader still never sees half of it, but a crash of the
    machine may lose it (a cache entry, which is only ever a saving).
    """
    raw = data.encode("utf-8") if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.{os.urandom(6).hex()}.tmp"
    # Created with O_EXCL under its final mode: the umask applies, and nobody can slip a file in first.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                 0o600 if private else 0o666)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        if keep_mode and path.exists():
            mode = path.stat().st_mode & 0o7777
        if mode is not None:
            os.chmod(tmp, mode)
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


def remove_folder(path: Path | None, *, tries: int = 20) -> None:
    """Remove a scratch folder entirely. A process of the grading killed a moment ago may still be writing
    into it as it goes (a cache file, a report), which leaves `rmtree` a folder that is not empty: try again
    until it is gone, or for about a second."""
    import shutil
    import time

    if path is None:
        return
    for _ in range(tries):
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.lexists(path):
            return
        time.sleep(0.05)
