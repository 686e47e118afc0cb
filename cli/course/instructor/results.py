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

from course.engine.parent.verdict import ExerciseResult
from course.registry import Exercise

MESSAGE_LIMIT = 4000
"""A check's message is cut here: it may carry what the student's code printed or raised."""
OUTPUT_LIMIT = 2000
"""What a check's code printed is kept up to here, for the instructor's log."""


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
    note: str = ""
    """What the student should know about the file graded (which of several was taken)."""
    cause: str = ""
    """Why a file found was not graded: `too_large` or `unreadable` ('' otherwise)."""

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
           private: str = "", note: str = "") -> Record:
    """The record of a graded exercise; `private` (the private copy's path) is replaced by `rel` in messages.
    A file the runner found untouched (the stub as handed out) is not tried: no points, no checks."""

    def clean(text: str, limit: int = MESSAGE_LIMIT) -> str:
        """The message as the student should read it: their own path, and not too long."""
        text = text.replace(private, rel or "") if private else text
        return text if len(text) <= limit else text[: limit - 1] + "…"

    checks = [
        {"id": c.id, "title": c.title, "status": c.status, "score": c.score, "max_score": c.max_score,
         "message": clean(c.message), "hidden": c.hidden, **_output(c, clean)}
        for c in result.checks
    ]
    known = max(result.max_score, max_points(exercise))
    if result.not_tried:
        return untouched(exercise, rel, data, result.seed)
    return Record(exercise.name, result.status, result.score, known, clean(result.message), rel, file_hash(data),
                  grader_fingerprint(exercise), result.seed, round(result.duration_s, 3), checks, note)


def _output(check: object, clean: Any) -> dict[str, str]:
    """What the check's code printed, when the engine kept it (shown to instructors only)."""
    text = getattr(check, "output", "") or ""
    return {"output": clean(text, OUTPUT_LIMIT)} if text else {}


def untried(exercise: Exercise, note: str = "", rel: str | None = None, cause: str = "") -> Record:
    """The record of an exercise with no file to grade, or with one that cannot be graded (`cause`
    says which, `note` says why): not tried, or failed for a file too large or unreadable."""
    if cause:
        return Record(exercise.name, "failed", 0.0, max_points(exercise), note, rel, None, grader_fingerprint(exercise),
                      cause=cause)
    message = f"not tried: no {exercise.name}.py was submitted" + (f" ({note})" if note else "")
    return Record(exercise.name, "not_tried", 0.0, max_points(exercise), message, None, None,
                  grader_fingerprint(exercise))


def untouched(exercise: Exercise, rel: str | None, data: bytes | None, seed: int = 0) -> Record:
    """The record of a file identical to the stub as handed out: not tried, whatever it would score."""
    return Record(exercise.name, "not_tried", 0.0, max_points(exercise),
                  f"not tried: {rel} is the stub as handed out", rel, file_hash(data), grader_fingerprint(exercise),
                  seed)


def _tests(exercise: Exercise, rec: Record) -> list[dict[str, Any]]:
    """The Gradescope tests of one exercise: one per check; when no public check has a verdict (none ran,
    or the grading was stopped before any reported while hidden checks did), one for its public points,
    then the hidden checks, or one test (shown after publishing, like them) for their points."""
    tags = [exercise.name, exercise.meta.topic]
    if _public_reported(exercise, rec):
        return [_check_test(exercise, k, c, tags) for k, c in enumerate(rec.checks, start=1)]
    status = "passed" if rec.status == "passed" and not rec.checks else "failed"
    public = min(rec.max_score, exercise.max_score or 0.0)
    hidden_score = sum(c["score"] for c in rec.checks)
    tests = [{"name": f"{exercise.name}: {exercise.meta.title}", "number": f"{exercise.position}.0",
              "score": max(0.0, min(rec.score - hidden_score, public)), "max_score": public, "status": status,
              "output": _unreported(rec) if rec.checks else rec.message, "visibility": "visible", "tags": tags}]
    if rec.checks:
        tests.extend(_check_test(exercise, k, c, tags) for k, c in enumerate(rec.checks, start=1))
    elif rec.max_score > public:
        tests.append({"name": f"{exercise.name}: checks kept for grading", "number": f"{exercise.position}.1",
                      "score": max(0.0, rec.score - public), "max_score": rec.max_score - public,
                      "status": status, "output": rec.message, "visibility": "after_published", "tags": tags})
    return tests


def _check_test(exercise: Exercise, k: int, c: dict[str, Any], tags: list[str]) -> dict[str, Any]:
    """The Gradescope test of one check."""
    return {
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


def _public_reported(exercise: Exercise, rec: Record) -> bool:
    """Whether the record's checks stand for the exercise's public points: some public check has a verdict,
    or the exercise has no public points and its hidden checks do."""
    return bool(rec.checks) and (any(not c.get("hidden") for c in rec.checks) or not exercise.max_score)


def _unreported(rec: Record) -> str:
    """Why no public check has a verdict, in words that name no hidden check (the record's own message may)."""
    why = " when the autograder's time budget ran out" if "time budget ran out" in rec.message else ""
    return f"the grading was stopped{why}, before any of these checks reported a verdict"


def visible_line(exercise: Exercise, rec: Record) -> str:
    """One exercise as the always-visible output says it: from its public checks alone, so it never
    counts, names or scores a hidden check (a student could otherwise read a hidden verdict in it)."""
    public = [c for c in rec.checks if not c.get("hidden")]
    if rec.checks and not public and not exercise.max_score:
        return f"{exercise.name}: graded; its checks are shown when grades are published"
    if public:
        score, top = sum(c["score"] for c in public), sum(c["max_score"] for c in public)
        word = "passed" if all(c["status"] == "passed" for c in public) else "failed"
        word = "timed out" if rec.status == "timeout" else word
    else:
        score, top = 0.0, min(rec.max_score, exercise.max_score or 0.0)
        word = {"not_tried": "not tried", "error": "not graded (the platform failed)",
                "timeout": "timed out"}.get(rec.status, "failed")
    line = f"{exercise.name}: {word}, {score:g}/{top:g}"
    untouched = rec.status == "not_tried" and rec.file is not None
    extra = rec.note or (rec.message.removeprefix("not tried: ") if rec.cause or untouched else "")
    extra = extra or (_unreported(rec) if rec.checks and not public else "")
    return f"{line} ({extra})" if extra else line


def results_json(exercises: list[Exercise], records: dict[str, Record], context: dict[str, Any],
                 execution_time: float | None = None) -> dict[str, Any]:
    """The Gradescope results of one student; `context` (course, student, JAX version, seed, isolation)
    goes into `extra_data`. Exercises without a record (not selected yet) are left out. `execution_time`
    is the wall time of the grading (by default, the longest exercise's)."""
    graded = [e for e in exercises if e.name in records]
    tests = [t for e in graded for t in _tests(e, records[e.name])]
    lines = [visible_line(e, records[e.name]) for e in graded]
    trouble = [e.name for e in graded if records[e.name].status == "error"]
    if trouble:
        lines.append(f"The grading platform failed on {', '.join(trouble)}; those scores are not the student's.")
    wall = execution_time if execution_time is not None else max((records[e.name].duration_s for e in graded),
                                                                 default=0.0)
    return {
        "score": sum(records[e.name].score for e in graded),
        "execution_time": round(wall, 3),
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
