"""JAX's persistent compilation cache of a workspace: written by gradings without a scan, kept to size by `course`.

Given a maximum size, JAX bounds the cache itself, but then every write lists every entry and reads
its access time (to find the least recently used), under a lock: a cost that grows with the folder.
Measured on a 2-core machine, one compile of a small program took 40 ms longer with 1,000 entries
and 190 ms longer with 3,000; a pass over the whole course writes about 450, and each new seed or
edit adds more, so a learner's every save grew slower over the weeks (`benchmarks/bench_cache.py`).

So gradings write with no bound: no lock, no listing, no access-time files. In a grading
(`in_grading`), each entry is written whole (a temporary file renamed over its name, so a grading
reading it at that moment never sees half of one) and a hit touches the entry's time, which makes
that time its last use. The parent trims the folder to MAX_BYTES, least recently used first,
before the first grading it starts in a folder (`trim_once`): a scan per command, not per compile.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path
from typing import Any

from course import files

MAX_BYTES = 256 * 2**20
"""The size a workspace's cache is trimmed to (least recently used entries go first)."""
KEEP_FRACTION = 0.75
"""A trimmed cache keeps this share of MAX_BYTES: room for a few commands' worth of new entries."""
STALE_TEMP_S = 3600.0
"""A temporary file this old was left by a grading that was killed while it wrote."""
ENTRY = "-cache"
_TRIMMED: set[str] = set()
_LOCK = threading.Lock()


def environment(cache_dir: Path, *, read_only: bool = False) -> dict[str, str]:
    """The settings that make a grading use `cache_dir`: every compile kept, no bound of JAX's own; with
    `read_only`, nothing written (no compile is slow enough to be kept)."""
    return {
        "JAX_COMPILATION_CACHE_DIR": str(cache_dir),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "1e9" if read_only else "0",
        "JAX_COMPILATION_CACHE_MAX_SIZE": "-1",
    }


def in_grading() -> None:
    """In a grading process, before any compile: whole writes and touched hits in JAX's unbounded cache.
    Nothing changes where JAX's cache class is not the one this was written for."""
    try:
        from jax._src import lru_cache
    except ImportError:
        return
    cls: Any = getattr(lru_cache, "LRUCache", None)
    put, get = getattr(cls, "put", None), getattr(cls, "get", None)
    if put is None or get is None or getattr(put, "whole_writes", False):
        return

    def whole_put(self: Any, key: str, value: bytes) -> None:
        """JAX's put, but the entry appears at its name whole or not at all."""
        if getattr(self, "eviction_enabled", True) or not key or not isinstance(self.path, Path):
            return put(self, key, value)
        path = self.path / f"{key}{ENTRY}"
        if not path.exists():
            files.write_atomic(path, value, durable=False)
        return None

    def touched_get(self: Any, key: str) -> bytes | None:
        """JAX's get; a hit also marks the entry as just used, for the trim."""
        value = get(self, key)
        if value is not None and not getattr(self, "eviction_enabled", True) and isinstance(self.path, Path):
            with contextlib.suppress(OSError):  # a read-only cache, or one trimmed meanwhile
                os.utime(self.path / f"{key}{ENTRY}")
        return value

    whole_put.whole_writes = True  # type: ignore[attr-defined]
    cls.put, cls.get = whole_put, touched_get


def trim_once(folder: Path) -> None:
    """`trim(folder)` the first time this process asks for it."""
    key = os.path.abspath(folder)
    with _LOCK:
        if key in _TRIMMED:
            return
        _TRIMMED.add(key)
    trim(folder)


def trim(folder: Path, max_bytes: int | None = None) -> int:
    """Keep `folder` within `max_bytes`: when over, remove the least recently used entries until it holds
    KEEP_FRACTION of it; also remove what JAX's own bound left (access-time files) and stale temporary
    files. Returns how many entries were removed. A folder that cannot be read is left as it is."""
    entries: list[tuple[float, int, Path]] = []
    now = time.time()
    try:
        listing = list(os.scandir(folder))
    except OSError:
        return 0
    for item in listing:
        with contextlib.suppress(OSError):
            if item.name.endswith("-atime") or (item.name.endswith(".tmp") and
                                                now - item.stat().st_mtime > STALE_TEMP_S):
                os.unlink(item.path)
            elif item.name.endswith(ENTRY) and item.is_file(follow_symlinks=False):
                info = item.stat()
                entries.append((max(info.st_mtime, info.st_atime), info.st_size, Path(item.path)))
    total = sum(size for _, size, _ in entries)
    max_bytes = MAX_BYTES if max_bytes is None else max_bytes
    if total <= max_bytes:
        return 0
    removed = 0
    for _, size, path in sorted(entries, key=lambda e: e[0]):
        if total <= max_bytes * KEEP_FRACTION:
            break
        with contextlib.suppress(OSError):
            path.unlink()
            total -= size
            removed += 1
    return removed


__all__ = ["MAX_BYTES", "environment", "in_grading", "trim", "trim_once"]
