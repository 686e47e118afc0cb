"""The learner's progress in `.course/progress.json`: atomic, locked writes; corrupt files kept as `.bak`.

Format (version 1)::

    {"version": 1, "exercises": {"<name>": {"status": "passed"|"failed", "score": 4.0,
      "max_score": 4.0, "last_checked": "2026-01-01T12:00:00Z", "grader_hash": "…",
      "signature": "…"}}}

Each entry is signed with a key kept beside the file, so an entry edited by hand is noticed and
ignored. Only the command layer writes progress, and only from a verified grading report.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import json
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

VERSION = 1


@dataclass
class Entry:
    """One exercise's last graded result (schema: `course.schema.EntryFile`)."""

    status: Literal["passed", "failed"]
    score: float
    max_score: float
    last_checked: str
    grader_hash: str
    signature: str = ""

    def __post_init__(self) -> None:
        """Hold scores as floats, so the signed text is the same before and after a round trip."""
        self.score, self.max_score = float(self.score), float(self.max_score)

    def payload(self, name: str) -> bytes:
        """The bytes the signature covers."""
        return f"{name}|{self.status}|{self.score}|{self.max_score}|{self.last_checked}|{self.grader_hash}".encode()


@dataclass
class Progress:
    """All stored results of a workspace (schema: `course.schema.ProgressFile`)."""

    version: int = VERSION
    exercises: dict[str, Entry] = field(default_factory=dict)


class ProgressStore:
    """Load and update `.course/progress.json` in a workspace."""

    def __init__(self, workspace: Path) -> None:
        self.folder = workspace / ".course"
        self.path = self.folder / "progress.json"
        self.warnings: list[str] = []

    def load(self) -> Progress:
        """The stored progress; missing means fresh, corrupt is kept as `.bak` with a warning."""
        try:
            raw = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return Progress()
        except OSError as exc:
            self.warnings.append(f"could not read {self.path} ({exc.strerror}); starting fresh")
            return Progress()
        try:
            progress = _parse(raw)
        except ValueError:
            backup = self.path.with_name("progress.json.bak")
            with contextlib.suppress(OSError):
                os.replace(self.path, backup)
            self.warnings.append(f"{self.path} was damaged; it is kept as {backup.name} and progress starts fresh")
            return Progress()
        return self._verified(progress)

    def _verified(self, progress: Progress) -> Progress:
        """Drop entries whose signature does not match: they were edited by hand."""
        key = self._key(create=False)
        kept = {}
        for name, entry in progress.exercises.items():
            if key and hmac.compare_digest(_sign(key, entry.payload(name)), entry.signature):
                kept[name] = entry
            else:
                self.warnings.append(
                    f"the stored result of `{name}` was edited by hand and is ignored; "
                    f"`course check {name}` grades it again"
                )
        progress.exercises = kept
        return progress

    def record(self, results: dict[str, Entry]) -> None:
        """Merge new results into the stored progress under a lock, then write atomically."""
        self.folder.mkdir(parents=True, exist_ok=True)
        with self._locked():
            progress = self.load()
            key = self._key(create=True)
            for name, entry in results.items():
                entry.signature = _sign(key, entry.payload(name))
                progress.exercises[name] = entry
            self._write(progress)

    def _write(self, progress: Progress) -> None:
        """Write to a temporary file in the same folder, fsync, then rename over the old file."""
        import secrets  # imported here: reading progress never needs it

        tmp = self.path.with_name(f".progress.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(_dump(progress))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold an exclusive lock so two `course check` runs never lose each other's updates."""
        with open(self.folder / "progress.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _key(self, *, create: bool) -> bytes:
        """The workspace's signing key; made on first write."""
        import secrets  # imported here: reading progress never needs it

        path = self.folder / "key"
        try:
            return path.read_bytes()
        except FileNotFoundError:
            if not create:
                return b""
        key = secrets.token_bytes(32)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(key)
        return key


def _parse(raw: str) -> Progress:
    """Parse progress.json; ValueError when it is not the documented shape.

    Only the shape is checked here: an entry's fields are trusted only when its signature
    verifies, which proves `course` wrote them after validating them with the schema.
    """
    data = json.loads(raw)
    if not isinstance(data, dict) or not isinstance(data.get("exercises"), dict):
        raise ValueError("not a progress file")
    entries = {}
    for name, item in data["exercises"].items():
        if not isinstance(item, dict) or set(item) != _ENTRY_FIELDS:
            raise ValueError(f"bad entry {name!r}")
        entries[name] = Entry(**item)
    return Progress(version=int(data.get("version", VERSION)), exercises=entries)


def _dump(progress: Progress) -> str:
    """Validate with the pydantic schema, then serialize."""
    from course.schema import ProgressFile  # imported only when writing, after a grading run

    return ProgressFile.model_validate(asdict(progress)).model_dump_json(indent=2)


_ENTRY_FIELDS = {"status", "score", "max_score", "last_checked", "grader_hash", "signature"}


def _sign(key: bytes, payload: bytes) -> str:
    """Hex HMAC-SHA256."""
    return hmac.new(key, payload, hashlib.sha256).hexdigest()


def now_iso() -> str:
    """The current time in UTC, ISO 8601 with a Z."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def status_of(progress: Progress, name: str, grader_hash: str) -> str:
    """passed / failed / stale / not_tried for one exercise."""
    entry = progress.exercises.get(name)
    if entry is None:
        return "not_tried"
    if entry.status == "passed" and entry.grader_hash != grader_hash:
        return "stale"
    return entry.status


def current(progress: Progress, names_and_hashes: list[tuple[str, str]]) -> str | None:
    """The first exercise not passed (stale counts as not passed), or None when all pass."""
    for name, digest in names_and_hashes:
        if status_of(progress, name, digest) != "passed":
            return name
    return None
