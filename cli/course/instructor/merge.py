"""`course gradebook merge DIR...`: the outputs of a class graded in shards, joined into one gradebook,
summary and report, the same as one run over the whole class would write (the report's date aside).

Each DIR is the `--out` of one `course grade --shard K/N`: a `results.json` per student (which
carries every record), its `summary.json` (entries not graded, roster students who sent nothing,
the references, the isolation) and its state. Shards must have been graded with one seed and
against the graders of the course given here, and no student may be in two of them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from course.engine.contain import protections
from course.errors import UsageError
from course.instructor.classrun import RESULTS, ClassRun, Student
from course.instructor.layouts import BadEntry
from course.instructor.results import grader_fingerprint, stored_records
from course.instructor.submissions import Entry
from course.registry import Course


def _read(path: Path, what: str) -> dict[str, Any]:
    """A JSON file of a shard; a missing or damaged one is a UsageError naming it."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path} cannot be read ({exc}); is {path.parent} the --out of a "
                         f"`course grade --shard` run ({what})?") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path} is not {what}; give `course gradebook merge` the output folders of the shards.")
    return data


def _weakest(isolations: list[dict[str, Any]]) -> protections.Protections:
    """The protections every shard had: what the merged class may claim."""
    def every(flag: str) -> bool:
        """True when every shard had this protection on."""
        return all(i.get(flag) for i in isolations)

    return protections.Protections(network_namespace=every("network_namespace"),
                                   landlock_abi=min(int(i.get("landlock_abi", 0)) for i in isolations),
                                   pid_namespace=every("pid_namespace"), seccomp=every("unix_sockets_refused"),
                                   user=(-1, -1) if every("unprivileged_user") else None)  # which uid: not kept


def _students(course: Course, folder: Path) -> list[Student]:
    """The students one shard graded, from their results files, checked against the course's graders."""
    fingerprints = {e.name: grader_fingerprint(e) for e in course.exercises}
    found = []
    for path in sorted(folder.glob(f"*/{RESULTS}")):
        results = _read(path, "a student's results")
        extra = results.get("extra_data", {})
        for name, fingerprint in extra.get("graders", {}).items():
            if fingerprints.get(name, fingerprint) != fingerprint:
                raise UsageError(f"{path} was graded against another version of {name}'s grader; grade that shard "
                                 "again with this course, or merge with the course it was graded with.")
        student = str(extra.get("student") or path.parent.name)
        entry = Entry(student, (), str(extra.get("entry") or student), str(extra.get("name") or ""),
                      tuple(extra.get("members") or ()))
        unreadable = [str(u) for u in extra.get("unreadable") or [] if isinstance(u, str)]
        found.append(Student(entry, stored_records(results), unreadable=unreadable))
    return found


def merge(course: Course, folders: list[Path], out: Path) -> ClassRun:
    """One class from the shards in `folders`, ready for `gradebook.write(run, out)`."""
    if not folders:
        raise UsageError("give `course gradebook merge` the output folder of every shard.")
    summaries = [_read(f / "summary.json", "the summary of a graded class") for f in folders]
    seeds = sorted({s.get("seed") for s in summaries}, key=str)
    if len(seeds) > 1:
        raise UsageError(f"the shards were graded with different seeds ({', '.join(map(str, seeds))}); grade "
                         "every shard with the same `--seed` (or none: shards then agree on one).")
    run = ClassRun(course, out, course.exercises, int(seeds[0] or 0), _weakest([s["isolation"] for s in summaries]))
    owner: dict[str, Path] = {}
    for folder in folders:
        for student in _students(course, folder):
            if student.entry.student in owner:
                raise UsageError(f"student {student.entry.student} is in both {owner[student.entry.student]} and "
                                 f"{folder}; each student belongs to one shard.")
            owner[student.entry.student] = folder
            run.students.append(student)
    run.students.sort(key=lambda s: s.entry.label)
    bad = {b["entry"]: BadEntry(b["entry"], b["reason"], b.get("student", ""), b.get("graded") is True)
           for s in summaries for b in s.get("bad_entries", [])}
    run.bad = sorted(bad.values(), key=lambda b: b.label)
    seen = set(owner)
    missing = [(m["student"], m.get("name", "")) for s in summaries for m in s.get("missing", [])]
    run.missing = list(dict.fromkeys(m for m in missing if m[0] not in seen))
    for summary in summaries:
        for name, status in summary.get("references", {}).items():
            run.references[name] = status if run.references.get(name, "passed") == "passed" else run.references[name]
    run.layout = summaries[0].get("layout", "folders")
    run.counted = (sum(s.get("graded_now", 0) for s in summaries), sum(s.get("reused", 0) for s in summaries))
    return run
