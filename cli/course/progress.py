"""The learner's progress in `.course/progress.json`: locked, atomic writes; a damaged file kept aside.

Format (version 1)::

    {"version": 1, "exercises": {"<name>": {"status": "passed"|"failed"|"not_tried", "score": 4.0,
      "max_score": 4.0, "last_checked": "2026-01-01T12:00:00Z", "grader_hash": "…",
      "passed_once": true, "signature": "…"}}}

`passed_once` (optional, false when absent) remembers a pass after a reset or a later failure,
so the solution stays open. A damaged file is kept as `progress.json.bak`, then `.bak.2`,
`.bak.3`, never overwriting an earlier one; a file of another version is an error, not a loss.

Each entry is signed with a key kept beside the file, so an entry edited by hand is noticed and
ignored. Only the session writes progress, and only from a verified grading report. Neither
reading nor writing imports pydantic: the schema's rules (`course.schema.EntryFile`) are applied
when writing (`_dump`), and a signature proves an entry was written, already checked, by `course`
itself.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Literal

from course import signing
from course.errors import CourseError
from course.files import write_atomic, write_new
from course.paths import WorkspacePaths

VERSION = 1
Status = Literal["passed", "failed", "stale", "not_tried"]
REBUILD = "`course check --all` grades your files again and rebuilds it"


class ProgressVersionError(CourseError):
    """The progress file was written in a layout this `course` does not know."""


@dataclass
class Entry:
    """One exercise's last graded result (schema: `course.schema.EntryFile`)."""

    status: Literal["passed", "failed", "not_tried"]
    score: float
    max_score: float
    last_checked: str
    grader_hash: str
    signature: str = ""
    passed_once: bool = False
    """True once the exercise has passed, even if it was reset or failed since."""

    def __post_init__(self) -> None:
        """Hold scores as floats, so the signed text is the same before and after a round trip."""
        self.score, self.max_score = float(self.score), float(self.max_score)

    def payload(self, name: str) -> bytes:
        """The bytes the signature covers (an entry without `passed_once` signs as it always did)."""
        once = "|passed_once" if self.passed_once else ""
        body = f"{self.status}|{self.score}|{self.max_score}|{self.last_checked}|{self.grader_hash}"
        return f"{name}|{body}{once}".encode()


ENTRY_FIELDS = frozenset(f.name for f in fields(Entry))
"""An entry's keys; `tests/test_progress.py` proves they match the pydantic schema's."""
OPTIONAL_FIELDS = frozenset({"passed_once"})
"""Keys an entry written by an earlier `course` lacks."""


@dataclass
class Progress:
    """All stored results of a workspace (schema: `course.schema.ProgressFile`)."""

    version: int = VERSION
    exercises: dict[str, Entry] = field(default_factory=dict)

    def status(self, name: str, grader_hash: str) -> Status:
        """passed / failed / stale (passed against another grader) / not_tried."""
        entry = self.exercises.get(name)
        if entry is None or entry.status == "not_tried":
            return "not_tried"
        if entry.status == "passed" and entry.grader_hash != grader_hash:
            return "stale"
        return entry.status


class ProgressStore:
    """Load and update the progress file of one workspace."""

    def __init__(self, paths: WorkspacePaths) -> None:
        self.paths = paths
        self.warnings: list[str] = []

    def load(self) -> Progress:
        """The stored progress; missing means fresh, damaged is kept aside with a warning saying how to rebuild."""
        path = self.paths.progress
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return Progress()
        except OSError as exc:
            self.warnings.append(f"could not read {path} ({exc.strerror}); starting fresh")
            return Progress()
        try:
            progress: Progress | None = _parse(raw.decode("utf-8"))
        except ValueError:  # UnicodeDecodeError and json's errors are ValueErrors too
            progress = None
        if progress is None:
            kept = self._keep_damaged(raw)
            where = f"it is kept as {kept.name}" if kept else "it could not be kept aside"
            self.warnings.append(f"{path} was damaged; {where}, and progress starts fresh: {REBUILD}")
            return Progress()
        if progress.version != VERSION:
            raise ProgressVersionError(
                f"{path} is in format {progress.version}, which this `course` does not know (it reads format "
                f"{VERSION}); upgrade `course` (`pip install -e .` in the course folder), or move the file aside "
                "to start fresh."
            )
        return self._verified(progress)

    def _keep_damaged(self, raw: bytes) -> Path | None:
        """Copy a damaged file to the first free backup name (never over an earlier one), then remove it."""
        import contextlib

        for n in range(1, 1000):
            backup = self.paths.progress_backup(n)
            try:
                write_new(backup, raw)
            except FileExistsError:
                continue
            except OSError:
                return None
            with contextlib.suppress(OSError):
                self.paths.progress.unlink()
            return backup
        return None

    def _verified(self, progress: Progress) -> Progress:
        """Drop entries whose signature does not match: they were edited by hand."""
        key = self._key(create=False)
        kept = {}
        for name, entry in progress.exercises.items():
            if key and signing.verify(key, entry.payload(name), entry.signature):
                kept[name] = entry
            else:
                self.warnings.append(
                    f"the stored result of `{name}` was edited by hand and is ignored; "
                    f"`course check {name}` grades it again"
                )
        progress.exercises = kept
        return progress

    def record(self, results: dict[str, Entry]) -> Progress:
        """Merge new results into the stored progress under a lock, write it, and return it."""
        from filelock import FileLock  # imported here: reading progress never needs it

        self.paths.state.mkdir(parents=True, exist_ok=True)
        # Two `course check` runs at once must not lose each other's updates.
        with FileLock(self.paths.progress_lock):
            progress = self.load()
            key = self._key(create=True)
            for name, entry in results.items():
                entry.signature = signing.sign(key, entry.payload(name))
                progress.exercises[name] = entry
            write_atomic(self.paths.progress, _dump(progress), private=True)
        return progress

    def _key(self, *, create: bool) -> bytes:
        """The workspace's signing key; made on first write."""
        path = self.paths.key
        try:
            return path.read_bytes()
        except FileNotFoundError:
            if not create:
                return b""
        import secrets  # imported here: reading progress never needs it

        key = secrets.token_bytes(32)
        write_new(path, key, mode=0o600)
        return key


def _parse(raw: str) -> Progress:
    """Parse progress.json; ValueError when it is not the documented shape.

    Only the shape is checked here: an entry's fields are trusted only when its signature
    verifies, which proves `course` wrote them after validating them with the schema.
    """
    data = json.loads(raw)
    if not isinstance(data, dict) or not isinstance(data.get("exercises"), dict):
        raise ValueError("not a progress file")
    version = data.get("version", VERSION)
    if not isinstance(version, int) or isinstance(version, bool):
        raise ValueError("no version")
    if version != VERSION:
        return Progress(version=version)  # not ours to read: the caller says so
    entries = {}
    for name, item in data["exercises"].items():
        if not isinstance(item, dict) or not ENTRY_FIELDS - OPTIONAL_FIELDS <= set(item) <= ENTRY_FIELDS:
            raise ValueError(f"bad entry {name!r}")
        entries[name] = Entry(**item)
    return Progress(version=version, exercises=entries)


KINDS = {"status": str, "score": float, "max_score": float, "last_checked": str, "grader_hash": str, "signature": str,
         "passed_once": bool}
"""Each entry field's type, as `course.schema.EntryFile` has it (`tests/test_progress.py` holds them to it)."""
STATUSES = ("passed", "failed", "not_tried")
"""The statuses an entry may record (`EntryFile.status`)."""


def _dump(progress: Progress) -> str:
    """Check every entry against the schema's rules, then serialize.

    The rules are `course.schema.EntryFile`'s, applied here without pydantic: importing it would add a
    tenth of a second to every `course check`, after the verdict is known."""
    if not isinstance(progress.version, int) or isinstance(progress.version, bool):
        raise ValueError(f"progress version {progress.version!r} is not an integer")
    data = asdict(progress)
    for name, entry in data["exercises"].items():
        for key, kind in KINDS.items():
            value = entry[key]
            if kind is bool and value in (0, 1):  # pydantic's lax rules: 0 and 1 are booleans, integers are floats
                value = bool(value)
            elif kind is float and isinstance(value, int):
                value = float(value)
            if not isinstance(value, kind):
                raise ValueError(f"the progress entry of {name!r} has {key} = {value!r}, not a {kind.__name__}")
            entry[key] = value
        if entry["status"] not in STATUSES:
            raise ValueError(f"the progress entry of {name!r} has status {entry['status']!r}")
    return json.dumps(data, indent=2)


def now_iso() -> str:
    """The current time in UTC, ISO 8601 with a Z."""
    import time  # not datetime: reading progress, as `course list` does, never needs either

    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
