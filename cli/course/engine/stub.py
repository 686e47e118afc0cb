"""Whether a submission is still the exercise's stub: not tried, so there is nothing to grade.

A file is not tried when its bytes, whitespace aside, are the stub as the course handed it out,
and that stub leaves the work to the learner: it raises NotImplementedError, as every stub of
this course does and as `course new` writes one. (A stub that runs, a given slow version to make
fast, say, is graded like any file: what it does is the lesson.) The stub as handed out is the
course's own stub file when the learner works elsewhere (a workspace made by `course init`, a
class's submissions, Gradescope's upload). A learner who edits the course's files in place edits
the stub itself, so its original is read from git: the version the stub was added with, in the
course's own checkout. A later commit of the learner's work never counts as the stub; a shallow
clone (CI checkouts) or a folder that is no checkout says nothing, and the file is graded.
"""

from __future__ import annotations

import ast
import hashlib
import subprocess
from pathlib import Path

from course.registry import Exercise

GIT_TIMEOUT_S = 10
NOT_STARTED = "not started: the stub still raises NotImplementedError"


def fingerprint(data: bytes) -> str:
    """A hash of source text with every whitespace character left out."""
    return hashlib.sha256(b"".join(data.split())).hexdigest()


def untouched(exercise: Exercise, submission: Path) -> str:
    """Why `submission` is not tried (one line), or '' when it must be graded."""
    try:
        data = submission.read_bytes()
    except OSError:
        return ""
    if not raises_not_implemented(data):  # then it is not such a stub, whitespace aside: no need to look further
        return ""
    original = pristine(exercise, submission)
    if original is None or not raises_not_implemented(original):
        return ""
    return NOT_STARTED if fingerprint(data) == fingerprint(original) else ""


def pristine(exercise: Exercise, submission: Path) -> bytes | None:
    """The stub as handed out, or None when it cannot be known for this submission."""
    try:
        in_place = submission.resolve() == exercise.stub_path.resolve()
        if not in_place:
            return exercise.stub_path.read_bytes()
    except OSError:
        return None
    return _first_version(str(exercise.root.resolve()), exercise.stub_rel.as_posix())


_FOUND: dict[tuple[str, str], bytes] = {}
"""First versions found so far: history does not change them (a miss is asked again next time)."""


def _first_version(root: str, rel: str) -> bytes | None:
    """The stub as the commit that added it holds it, in `root`'s own full git checkout; else None."""
    if (root, rel) not in _FOUND:
        found = _added_version(root, rel)
        if found is None:
            return None
        _FOUND[root, rel] = found
    return _FOUND[root, rel]


def _added_version(root: str, rel: str) -> bytes | None:
    """Ask git for the stub as it was added (three short commands)."""
    shape = _git(root, "rev-parse", "--show-toplevel", "--is-shallow-repository")
    lines = shape.decode(errors="replace").split() if shape is not None else []
    if len(lines) != 2 or Path(lines[0]).resolve() != Path(root) or lines[1] != "false":
        return None
    added = _git(root, "log", "--diff-filter=A", "--format=%H", "--", rel)
    commits = added.decode().split() if added else []
    return _git(root, "show", f"{commits[-1]}:{rel}") if commits else None


def _git(root: str, *args: str) -> bytes | None:
    """A git command's output in `root`, None when git is missing or fails."""
    try:
        done = subprocess.run(["git", "-C", root, *args], capture_output=True, timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def raises_not_implemented(source: bytes) -> bool:
    """True when the source raises NotImplementedError somewhere (the usual way a stub says 'your turn')."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return b"NotImplementedError" in source
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(target, ast.Name) and target.id == "NotImplementedError":
                return True
    return False
