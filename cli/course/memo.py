"""The registry's memo in `.course/registry.json`: what validating the course's files gave, and when to trust it.

Validating needs pydantic and reading the graders' points needs their source, so the registry
keeps the result here, keyed by a hash of every file's bytes. Hashing still reads every file,
so `course list` would cost more with each exercise; the memo also keeps each file's stat
signature (size, modification and change times, inode), and a course whose files all show the
same signatures is taken from the memo without reading them. The change time cannot be set
by hand, so any write to a file is seen; a file modified within two seconds of the memo's
writing is read again anyway, since a coarse clock could hide a second write (git's "racy"
rule).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import Any

from course.files import write_atomic
from course.paths import registry_memo

FORMAT = 2
RACY_NS = 2_000_000_000


def load(root: Path) -> dict[str, Any]:
    """The course's memo as stored (empty when missing, unreadable or of another format)."""
    try:
        data = json.loads(registry_memo(root).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    ok = isinstance(data, dict) and data.get("format") == FORMAT and isinstance(data.get("validated"), dict)
    return data if ok else {}


def signature(path: str) -> list[int] | None:
    """What says a file is unchanged without reading it; None for a missing file."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def unchanged(root: Path, memo: dict[str, Any], schema: str) -> bool:
    """True when every file the memo was made from still has its signature (and none is racy)."""
    files, written = memo.get("files"), memo.get("written_ns", 0)
    if memo.get("schema") != schema or not isinstance(files, dict) or not files:
        return False
    base = str(root)
    for rel, known in files.items():
        now = signature(os.path.join(base, rel))
        if now != known or (now is not None and now[1] >= written - RACY_NS):
            return False
    return True


def save(root: Path, memo: dict[str, Any], files: list[str]) -> None:
    """Write the memo with the signatures of `files` (relative to `root`); a read-only course goes without."""
    base = str(root)
    memo = {**memo, "format": FORMAT, "written_ns": time.time_ns(),
            "files": {rel: signature(os.path.join(base, rel)) for rel in files}}
    with contextlib.suppress(OSError):
        write_atomic(registry_memo(root), json.dumps(memo), private=True)
