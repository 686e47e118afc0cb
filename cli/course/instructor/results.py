"""One student's results in the Gradescope `results.json` format, built from per-exercise records.

A record is everything `course grade` knows about one exercise of one student: the verdict, each
check, the file graded and the hashes it was graded against. Records are kept in
`extra_data.exercises`, so a later run can reuse an exercise whose grader and file are unchanged;
`tests[]` and the scores are derived from them.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from course.engine.verdict import ExerciseResult
from course.registry import Exercise

MESSAGE_LIMIT = 4000
"""A check's message is cut here: it may carry what the student's code printed or raised."""


def grader_fingerprint(exercise: Exercise) -> str:
    """A hash of everything that grades `exercise`: the public grader, its metadata and the hidden grader."""
    digest = hashlib.sha256(exercise.grader_hash.encode())
    if exercise.hidden_grader_path.is_file():
        digest.update(exercise.hidden_grader_path.read_bytes())
    return digest.hexdigest()[:16]


def file_hash(data: bytes | None) -> str | None:
    """The SHA-256 of a submitted file, None for no file."""
    return hashlib.sha256(data).hexdigest() if data is not None else None


def max_points(exercise: Exercise) -> float:
    """What an exercise is worth with its hidden checks, read from the graders' marks."""
    return (exercise.max_score or 0.0) + (exercise.hidden_max_score or 0.0)


@dataclass
class Record:
    """One exercise of one student, as graded (or as found: not tried)."""

    name: str
    status: str
    """passed, failed, timeout, error (the platform's) or not_tried."""
    score: float
    max_score: float
    message: str = ""
    file: str | None = None
    file_sha256: str | None = None
    grader: str = ""
    seed: int = 0
    duration_s: float = 0.0
    checks: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The record as stored in `extra_data.exercises`."""
        return dict(vars(self))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Record | None:
        """A stored record, or None when it is not one."""
        try:
            return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})
        except TypeError:
            return None


def record(exercise: Exercise, result: ExerciseResult, *, rel: str | None, data: bytes | None,
           private: str = "") -> Record:
    """The record of a graded exercise; `private` (the private copy's path) is replaced by `rel` in messages."""

    def clean(text: str) -> str:
        """The message as the student should read it: their own path, and not too long."""
        text = text.replace(private, rel or "") if private else text
        return text if len(text) <= MESSAGE_LIMIT else text[: MESSAGE_LIMIT - 1] + "…"

    checks = [
        {"id": c.id, "title": c.title, "status": c.status, "score": c.score, "max_score": c.max_score,
         "message": clean(c.message), "hidden": c.hidden}
        for c in result.checks
    ]
    status = "not_tried" if result.not_tried else result.status
    known = max(result.max_score, max_points(exercise))
    return Record(exercise.name, status, result.score, known, clean(result.message), rel, file_hash(data),
                  grader_fingerprint(exercise), result.seed, round(result.duration_s, 3), checks)


def untried(exercise: Exercise, note: str = "", rel: str | None = None) -> Record:
    """The record of an exercise with no file to grade (or one that cannot be graded: `note` says why)."""
    if note:
        return Record(exercise.name, "failed", 0.0, max_points(exercise), note, rel, None, grader_fingerprint(exercise))
    message = f"not tried: no {exercise.name}.py was submitted"
    return Record(exercise.name, "not_tried", 0.0, max_points(exercise), message, None, None,
                  grader_fingerprint(exercise))


def _tests(exercise: Exercise, rec: Record) -> list[dict[str, Any]]:
    """The Gradescope tests of one exercise: one per check, or one for the whole exercise when none ran."""
    tags = [exercise.name, exercise.meta.topic]
    if not rec.checks:
        status = "passed" if rec.status == "passed" else "failed"
        return [{"name": f"{exercise.name}: {exercise.meta.title}", "number": f"{exercise.position}.0",
                 "score": rec.score, "max_score": rec.max_score, "status": status, "output": rec.message,
                 "visibility": "visible", "tags": tags}]
    return [
        {
            "name": f"{exercise.name}: {c['title']}",
            "number": f"{exercise.position}.{k}",
            "score": c["score"],
            "max_score": c["max_score"],
            "status": "passed" if c["status"] == "passed" else "failed",  # a skipped check scores nothing
            "output": c["message"],
            "visibility": "after_published" if c.get("hidden") else "visible",
            "tags": tags,
            "extra_data": {"check": c["id"], "status": c["status"]},
        }
        for k, c in enumerate(rec.checks, start=1)
    ]


def results_json(exercises: list[Exercise], records: dict[str, Record], context: dict[str, Any]) -> dict[str, Any]:
    """The Gradescope results of one student; `context` (course, student, JAX version, seed, isolation)
    goes into `extra_data`. Exercises without a record (not selected yet) are left out."""
    graded = [e for e in exercises if e.name in records]
    tests = [t for e in graded for t in _tests(e, records[e.name])]
    score = sum(records[e.name].score for e in graded)
    lines = [f"{e.name}: {records[e.name].status.replace('_', ' ')}, "
             f"{records[e.name].score:g}/{records[e.name].max_score:g}" for e in graded]
    trouble = [e.name for e in graded if records[e.name].status == "error"]
    if trouble:
        lines.append(f"The grading platform failed on {', '.join(trouble)}; those scores are not the student's.")
    return {
        "score": score,
        "execution_time": round(sum(records[e.name].duration_s for e in graded), 3),
        "output": "\n".join(lines),
        "output_format": "text",
        "stdout_visibility": "hidden",
        "tests": tests,
        "extra_data": {
            **context,
            "graders": {e.name: records[e.name].grader for e in graded},
            "exercises": {e.name: records[e.name].to_dict() for e in graded},
        },
    }


def stored_records(results: dict[str, Any]) -> dict[str, Record]:
    """The records kept in an earlier `results.json` (none if it is not one of ours)."""
    raw = results.get("extra_data", {}).get("exercises", {}) if isinstance(results, dict) else {}
    if not isinstance(raw, dict):
        return {}
    found = {name: Record.from_dict(data) for name, data in raw.items() if isinstance(data, dict)}
    return {name: rec for name, rec in found.items() if rec is not None}
