"""What `course grade` keeps in its output folder between runs: the class's seed, and how each reference fared.

The seed makes a student graded in a later run meet the same inputs as their classmates. The
references' verdicts (graded first, to fill the shared compilation cache) are kept with the hash
of the grader they were graded against, so a rerun that grades nobody still reports them.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import secrets
from pathlib import Path
from typing import Any

from course.files import write_atomic
from course.instructor.layouts import Intake
from course.instructor.results import grader_fingerprint
from course.registry import Course

STATE_FILE = ".grading.json"


def class_seed(course: Course, intake: Intake) -> int:
    """A seed every shard of one class computes alike: from the course and the names of all its entries."""
    names = sorted(item.label for item in [*intake.entries, *intake.bad])
    digest = hashlib.sha256("\n".join([course.meta.title, *names]).encode()).digest()
    return int.from_bytes(digest[:4], "big") % 2**31


def load(out: Path, seed: int | None, fallback: int | None = None) -> dict[str, Any]:
    """The kept state: the seed given, else the one an earlier run kept, else `fallback` or a new one."""
    state: dict[str, Any] = {}
    with contextlib.suppress(OSError, ValueError):
        loaded = json.loads((out / STATE_FILE).read_text(encoding="utf-8"))
        state = loaded if isinstance(loaded, dict) else {}
    if seed is None and not isinstance(state.get("seed"), int):
        seed = fallback if fallback is not None else secrets.randbelow(2**31)
    if seed is not None and seed != state.get("seed"):
        state = {"seed": seed}  # references graded under another seed say nothing of this one
    state.setdefault("references", {})
    write_atomic(out / STATE_FILE, json.dumps(state))
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
    write_atomic(out / STATE_FILE, json.dumps({"seed": seed, "references": kept}))
