"""The stub as the course hands it out, and the one rule for "not tried" that every command shares.

A file is not tried when, whitespace aside, it is the exercise's stub as the course hands it out
and that stub leaves the work to the learner (it raises NotImplementedError, as every stub of
this course does and as `course new` writes one; a stub that runs, a given slow version to make
fast, say, is graded like any file). Which stub the course hands out is recorded in
`exercises/stubs.lock`: a fingerprint per exercise (the SHA-256 of the stub with every whitespace
character left out), written by `course new` and `course validate --record-stubs` and checked by
`course validate`. The record is what makes the rule hold whatever the git history: a learner who
edits the course's own files in place, in a fresh clone, a release or a fork whose stubs were
rewritten after their first commit, still has an untouched file read as the stub.

A course without a record (an older course, a folder made by hand) compares a file in a workspace
of its own with the course's stub file; a file edited in place there cannot be told from the stub,
so it is graded. Where the stub's bytes are needed (reset, release, a workspace), they are the
stub file's when it matches the record, else the newest version git holds that matches it.
"""

from __future__ import annotations

import ast
import hashlib
import subprocess
from pathlib import Path

from course import pyast
from course.errors import UsageError
from course.registry import Course, Exercise

LOCK = Path("exercises", "stubs.lock")
"""Where a course records its stubs' fingerprints, relative to its root."""
NOT_STARTED = "not started: the stub still raises NotImplementedError"
GIT_TIMEOUT_S = 10
_HEADER = ("# The stubs as this course hands them out: per exercise, the SHA-256 of its stub with every\n"
           "# whitespace character left out. A learner's file that matches is \"not tried\", however it\n"
           "# got there. After changing a stub on purpose, run `course validate NAME --record-stubs`.\n")

__all__ = ["LOCK", "NOT_STARTED", "fingerprint", "handed_out", "is_handed_out", "raises_not_implemented", "record",
           "recorded", "stale", "untouched", "untouched_data"]


def fingerprint(data: bytes) -> str:
    """A hash of source text with every whitespace character left out."""
    return hashlib.sha256(b"".join(data.split())).hexdigest()


_RECORDS: dict[tuple[Path, int], dict[str, str]] = {}
"""Records read so far, by lock path and modification time: one read per command."""


def recorded(root: Path) -> dict[str, str]:
    """The fingerprints `root`'s course records, by exercise name; empty when it records none."""
    path = root / LOCK
    try:
        key = (path, path.stat().st_mtime_ns)
    except OSError:
        return {}
    if key not in _RECORDS:
        _RECORDS[key] = _parse(path)
    return _RECORDS[key]


def _parse(path: Path) -> dict[str, str]:
    """Read a lock file: `name = "hex"` lines; a file that is not one is the course's error."""
    import tomllib

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"{path} cannot be read ({exc}); restore it from git, or rewrite it with "
                         "`course validate --record-stubs`.") from None
    stubs = data.get("stubs", {})
    if not isinstance(stubs, dict) or not all(isinstance(v, str) for v in stubs.values()):
        raise UsageError(f"{path} has no [stubs] table of fingerprints; rewrite it with "
                         "`course validate --record-stubs`.")
    return dict(stubs)


def untouched(exercise: Exercise, submission: Path) -> str:
    """Why the file at `submission` is not tried (one line), or '' when it must be graded."""
    try:
        data = submission.read_bytes()
    except OSError:
        return ""
    return NOT_STARTED if untouched_data(exercise, data, in_place=_in_place(exercise, submission)) else ""


def untouched_data(exercise: Exercise, data: bytes | None, *, in_place: bool = False) -> bool:
    """True when `data` is the stub as handed out, whitespace aside, and that stub leaves the work to
    the learner. `in_place`: the data is the course's own stub file (so that file proves nothing)."""
    return data is not None and raises_not_implemented(data) and is_handed_out(exercise, data, in_place=in_place)


def is_handed_out(exercise: Exercise, data: bytes, *, in_place: bool = False) -> bool:
    """True when `data` is, whitespace aside, the stub as the course hands it out."""
    expected = _expected(exercise, in_place=in_place)
    return expected is not None and fingerprint(data) == expected


def _expected(exercise: Exercise, *, in_place: bool) -> str | None:
    """The fingerprint of the stub as handed out, or None when it cannot be known."""
    found = recorded(exercise.root).get(exercise.name)
    if found is not None or in_place:
        return found
    try:
        return fingerprint(exercise.stub_path.read_bytes())
    except OSError:
        return None


def _in_place(exercise: Exercise, path: Path) -> bool:
    """True when `path` is the course's own stub file (the learner edits the course in place)."""
    try:
        return path.resolve() == exercise.stub_path.resolve()
    except OSError:
        return False


def handed_out(exercise: Exercise, *, in_place: bool = False) -> bytes | None:
    """The stub's bytes as the course hands it out, or None when they cannot be found.

    The stub file when it matches the record, else the newest version in the course's git history
    that matches. Without a record: the stub file, unless the learner edits it in place (`in_place`),
    where only the version git's HEAD holds can stand for it."""
    expected = recorded(exercise.root).get(exercise.name)
    if expected is None and in_place:
        return _git(str(exercise.root), "show", f"HEAD:./{exercise.stub_rel.as_posix()}")
    try:
        current = exercise.stub_path.read_bytes()
    except OSError:
        current = None
    if current is not None and (expected is None or fingerprint(current) == expected):
        return current
    return _from_history(exercise, expected) if expected is not None else None


def _from_history(exercise: Exercise, expected: str) -> bytes | None:
    """The newest version of the stub file in git whose fingerprint is `expected`."""
    root, rel = str(exercise.root), exercise.stub_rel.as_posix()
    listed = _git(root, "log", "--format=%H", "--", rel)
    for commit in (listed.decode().split() if listed else [])[:200]:
        data = _git(root, "show", f"{commit}:{rel}")
        if data is not None and fingerprint(data) == expected:
            return data
    return None


def _git(root: str, *args: str) -> bytes | None:
    """A git command's output in `root`, None when git is missing or fails."""
    try:
        done = subprocess.run(["git", "-C", root, *args], capture_output=True, timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def stale(exercise: Exercise) -> str:
    """What is wrong with the exercise's record (one sentence), or '' when its stub file matches it."""
    found = recorded(exercise.root).get(exercise.name)
    if found is None:
        return (f"{LOCK.as_posix()} records no stub for `{exercise.name}`, so an untouched copy would be graded "
                f"as failed; record it with `course validate {exercise.name} --record-stubs`.")
    try:
        current = fingerprint(exercise.stub_path.read_bytes())
    except OSError:
        return ""  # a missing stub is named by the layout checks
    if current != found:
        return (f"the stub {exercise.stub_rel.as_posix()} is not the one {LOCK.as_posix()} records; if you changed "
                f"it on purpose, record it with `course validate {exercise.name} --record-stubs`, else restore it.")
    return ""


def record(course: Course, names: list[str]) -> list[str]:
    """Record the stub files of `names` as the stubs the course hands out; returns the names whose
    record changed. Exercises no longer in the course are dropped from the record."""
    from course.files import write_atomic

    old = recorded(course.root)
    new = {e.name: old[e.name] for e in course.exercises if e.name in old}
    for exercise in course.select(names) if names else course.exercises:
        new[exercise.name] = fingerprint(exercise.stub_path.read_bytes())
    body = "".join(f'{e.name} = "{new[e.name]}"\n' for e in course.exercises if e.name in new)
    write_atomic(course.root / LOCK, f"{_HEADER}format_version = 1\n\n[stubs]\n{body}")
    return sorted(n for n in new if old.get(n) != new[n])


def raises_not_implemented(source: bytes) -> bool:
    """True when the source raises NotImplementedError somewhere (the usual way a stub says 'your turn')."""
    try:
        tree = pyast.parse(source)
    except (SyntaxError, ValueError):
        return b"NotImplementedError" in source
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(target, ast.Name) and target.id == "NotImplementedError":
                return True
    return False
