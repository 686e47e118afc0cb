"""What a graded class adds up to: `gradebook.csv`, a row per student, and `summary.json`: which rules it breaks.

Both are rebuilt from every student's records at the end of each run, so a run that was stopped
and resumed, or a class graded in shards and merged (`course.instructor.merge`), writes the same
files as one run. An entry that could not be graded and a roster student who sent nothing each
get a row saying so. Exercises not tried (no file, or the stub as handed out) score nothing and
count in no pass rate, no mean and no common failure.
"""

from __future__ import annotations

import csv
import io
import json
import re
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

from course.files import write_atomic
from course.instructor.classrun import ClassRun, Student
from course.instructor.context import version
from course.instructor.results import max_points

COMMON_FAILURES = 5
"""How many of the most common failure messages `summary.json` keeps per check."""
QUOTE_LINES = 12
QUOTE_CHARS = 1500
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
STATUSES = ("passed", "failed", "timeout", "error", "not_tried")


def gradebook_csv(run: ClassRun) -> str:
    """One row per student (and per member of a group submission), per bad entry and per roster student
    who sent nothing: a column per exercise's score (empty if never graded, the platform's failure included),
    total, max_total, note."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    names = [e.name for e in run.course.exercises]
    top = f"{sum(max_points(e) for e in run.course.exercises):g}"
    writer.writerow(["student", "name", "entry", *names, "total", "max_total", "note"])
    rows: list[tuple[str, list[str]]] = []
    for student in run.students:
        entry = student.entry
        cells = [_cell(student, n) for n in names]
        total = f"{run.total(student):g}"
        rows.append((entry.label, [entry.student, entry.name, entry.label, *cells, total, top, student.note]))
        rows += [(entry.label, [m, "", entry.label, *cells, total, top, f"group submission of {entry.student}"])
                 for m in entry.members]
    rows += [(bad.label, [bad.student, "", bad.label, *[""] * len(names), "", top, f"not graded: {bad.reason}"])
             for bad in run.bad if not bad.graded]  # a graded one's student row says it (`Student.note`)
    for _, row in sorted(rows, key=lambda r: r[0]):
        writer.writerow(row)
    for sid, name in run.missing:
        writer.writerow([sid, name, "", *[""] * len(names), "0", top, "submitted nothing"])
    return buffer.getvalue()


def _cell(student: Student, name: str) -> str:
    """A student's score on one exercise; empty when it was never graded (not selected, or the platform failed
    on it: no score of theirs, which the row's note says)."""
    rec = student.records.get(name)
    return "" if rec is None or rec.status == "error" else f"{rec.score:g}"


def quoted(message: str) -> str:
    """A message as summaries quote it: whole (a syntax error with its line and caret), up to a limit."""
    lines = message.strip().splitlines() or [""]
    text = "\n".join(lines[:QUOTE_LINES])
    if len(text) > QUOTE_CHARS:
        text = text[:QUOTE_CHARS].rsplit(" ", 1)[0]
    return text + (" …" if text != "\n".join(lines) else "")


def _pattern(message: str) -> str:
    """A failure message with its numbers blanked, so the same mistake on other inputs counts once."""
    first = (message.strip().splitlines() or ["(no message)"])[0]
    return _NUMBER.sub("#", first)[:300]


def _check_stats(run: ClassRun, name: str) -> list[dict[str, Any]]:
    """Per check of one exercise: how many who tried it passed and failed it, and the commonest failures."""
    stats: dict[str, dict[str, Any]] = {}
    messages: dict[str, Counter[str]] = {}
    examples: dict[tuple[str, str], str] = {}
    for rec in run.tried(name):
        for check in rec.checks:
            row = stats.setdefault(check["id"], {"id": check["id"], "title": check["title"],
                                                 "hidden": bool(check.get("hidden")),
                                                 "max_score": check["max_score"], "passed": 0, "failed": 0})
            if check["status"] in ("passed", "skipped"):
                row["passed"] += 1
                continue
            row["failed"] += 1
            pattern = _pattern(check["message"])
            messages.setdefault(check["id"], Counter())[pattern] += 1
            examples.setdefault((check["id"], pattern), quoted(check["message"]))
    for check_id, row in stats.items():
        seen = row["passed"] + row["failed"]
        row["pass_rate"] = round(row["passed"] / seen, 4) if seen else None
        row["common_failures"] = [{"message": examples[check_id, key], "count": count}
                                  for key, count in messages.get(check_id, Counter()).most_common(COMMON_FAILURES)]
    return list(stats.values())


def _exercise(run: ClassRun, exercise: Any) -> dict[str, Any]:
    """One exercise of the class: who tried it, how they fared, and each check's numbers."""
    recs = [s.records[exercise.name] for s in run.students if exercise.name in s.records]
    status = Counter(r.status for r in recs)
    attempts = run.tried(exercise.name)
    return {
        "name": exercise.name,
        "position": exercise.position,
        "title": exercise.meta.title,
        "topic": exercise.meta.topic,
        "max_score": max_points(exercise),
        "graded": len(recs),
        "tried": len(attempts),
        **{key: status.get(key, 0) for key in STATUSES},
        "too_large": sum(r.cause == "too_large" for r in attempts),
        "pass_rate": round(status.get("passed", 0) / len(attempts), 4) if attempts else None,
        "mean_score": round(statistics.fmean(r.score for r in attempts), 3) if attempts else None,
        "checks": _check_stats(run, exercise.name),
    }


def summary(run: ClassRun) -> dict[str, Any]:
    """The class at a glance: totals, and per exercise and check who passed, who failed and why."""
    scores = [run.total(s) for s in run.students]
    on, off = run.protections.describe()
    return {
        "course": run.course.meta.title,
        "course_version": version("course"),
        "jax_version": version("jax"),
        "seed": run.seed,
        "layout": run.layout,
        "students": len(run.students),
        "graded_now": run.graded_now[0],
        "reused": run.graded_now[1],
        "platform_errors": [s.entry.student for s in run.students if s.error],
        "bad_entries": [{"entry": b.label, "reason": b.reason, "student": b.student,
                         **({"graded": True} if b.graded else {})} for b in run.bad],
        "missing": [{"student": sid, "name": name} for sid, name in run.missing],
        "max_total": sum(max_points(e) for e in run.course.exercises),
        "mean_total": round(statistics.fmean(scores), 3) if scores else None,
        "median_total": statistics.median(scores) if scores else None,
        "isolation": {**run.protections.as_dict(), "on": on, "off": off},
        "references": {e.name: run.references[e.name] for e in run.course.exercises if e.name in run.references},
        "exercises": [_exercise(run, e) for e in run.course.exercises],
        "totals": {s.entry.student: run.total(s) for s in run.students},
    }


def write(run: ClassRun, out: Path | None = None) -> tuple[dict[str, Any], list[Path], str]:
    """Write `gradebook.csv`, `summary.json` and `report.html` (into `out`, by default the run's folder);
    return the summary, the files written, and why the report could not be made ('' when it was)."""
    from course.instructor import htmlreport

    out = out or run.out
    data = summary(run)
    written = [out / "gradebook.csv", out / "summary.json"]
    write_atomic(written[0], gradebook_csv(run))
    write_atomic(written[1], json.dumps(data, indent=2))
    if not htmlreport.available():
        return data, written, htmlreport.MISSING
    written.append(htmlreport.write(out / "report.html", run, data))
    return data, written, ""
