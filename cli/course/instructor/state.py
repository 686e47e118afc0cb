"""The seed of a graded run, and what `course grade` keeps in its output folder between runs.

The seed is the course's (`course_seed`), never drawn per run, so every regrade, every shard and
the autograders' bundles give the same inputs, hence the same scores; `--seed` overrides it and
the output folder keeps the one its runs used. The references' verdicts (graded first, to fill
the shared compilation cache) are kept with the hash of the grader they were graded against, so a
rerun that grades nobody still reports them.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import tomllib
from pathlib import Path
from typing import Any

from course.errors import UsageError
from course.files import write_atomic
from course.instructor.results import grader_fingerprint
from course.registry import COURSE_FILE, Course

STATE_FILE = ".grading.json"
_SEED_LINE = re.compile(r"^[ \t]*seed[ \t]*=[^\n]*\n?", re.MULTILINE)


def course_seed(course: Course) -> int:
    """The seed of every graded run of `course`: `seed` in `course.toml`, else one derived from its title
    and its hidden checks (which students never see, so they cannot work it out from their copy)."""
    if course.meta.seed is not None:
        return course.meta.seed
    digest = hashlib.sha256(course.meta.title.encode())
    for exercise in course.exercises:
        if exercise.hidden_grader_path.is_file():
            digest.update(exercise.hidden_grader_path.read_bytes())
    return int.from_bytes(digest.digest()[:4], "big") % 2**31


def course_toml(course: Course, *, seeded: bool) -> bytes:
    """`course.toml` as a copy of the course holds it: with the course's seed written in (`seeded`: an
    autograder bundle, which grades alike on every regrade) or without any (the students' copy)."""
    text = _SEED_LINE.sub("", (course.root / COURSE_FILE).read_text(encoding="utf-8"))
    if "seed" in tomllib.loads(text):
        raise UsageError(f"{course.root / COURSE_FILE} sets `seed` in a way this copy cannot rewrite; write it on a "
                         "line of its own, `seed = 2027`, before any [table].")
    if seeded:
        head = re.match(r"(?:[ \t]*(?:#[^\n]*)?\n)*", text)
        at = head.end() if head else 0
        text = f"{text[:at]}seed = {course_seed(course)}\n{text[at:]}"
    return text.encode("utf-8")


def load(out: Path, seed: int | None, course: Course) -> dict[str, Any]:
    """The kept state: the seed given, else the one an earlier run in `out` kept, else the course's."""
    state: dict[str, Any] = {}
    with contextlib.suppress(OSError, ValueError):
        loaded = json.loads((out / STATE_FILE).read_text(encoding="utf-8"))
        state = loaded if isinstance(loaded, dict) else {}
    if seed is None and not isinstance(state.get("seed"), int):
        seed = course_seed(course)
    if seed is not None and seed != state.get("seed"):
        state = {"seed": seed}  # references graded under another seed say nothing of this one
    state.setdefault("references", {})
    write_atomic(out / STATE_FILE, json.dumps(state), private=True)
    return state


def kept_references(course: Course, state: dict[str, Any]) -> dict[str, str]:
    """How each reference fared in an earlier run, for the graders that have not changed since."""
    kept = state.get("references", {})
    fingerprints = {e.name: grader_fingerprint(e) for e in course.exercises}
    return {name: ref["status"] for name, ref in kept.items()
            if isinstance(ref, dict) and ref.get("grader") == fingerprints.get(name) and "status" in ref}


def keep_references(out: Path, course: Course, seed: int, references: dict[str, str]) -> None:
    """Store the seed and how the references fared, with their graders' hashes, for the runs that follow."""
    kept = {e.name: {"status": references[e.name], "grader": grader_fingerprint(e)}
            for e in course.exercises if e.name in references}
    write_atomic(out / STATE_FILE, json.dumps({"seed": seed, "references": kept}), private=True)
