"""What a graded class adds up to: `gradebook.csv`, a row per student, and `summary.json`: which rules it breaks.

Both are rebuilt from every student's records at the end of each run, so a run that was stopped
and resumed writes the same files as one that was not.
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
from course.instructor.grade import ClassRun, Student
from course.instructor.results import max_points

COMMON_FAILURES = 5
"""How many of the most common failure messages `summary.json` keeps per check."""
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")


def totals(run: ClassRun, student: Student) -> tuple[float, float]:
    """A student's points and what the whole course is worth (hidden checks included)."""
    score = sum(r.score for name, r in student.records.items() if name in {e.name for e in run.course.exercises})
    return score, sum(max_points(e) for e in run.course.exercises)


def gradebook_csv(run: ClassRun) -> str:
    """One row per student: a column per exercise's score (empty if never graded), then total and max_total."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    names = [e.name for e in run.course.exercises]
    writer.writerow(["student", *names, "total", "max_total"])
    for student in run.students:
        cells = [f"{student.records[n].score:g}" if n in student.records else "" for n in names]
        total, max_total = totals(run, student)
        writer.writerow([student.entry.student, *cells, f"{total:g}", f"{max_total:g}"])
    return buffer.getvalue()


def _shortened(message: str, limit: int = 300) -> str:
    """The first line of a message, cut at a word before `limit` characters."""
    first = (message.strip().splitlines() or [""])[0]
    return first if len(first) <= limit else first[:limit].rsplit(" ", 1)[0] + " …"


def _pattern(message: str) -> str:
    """A failure message with its numbers blanked, so the same mistake on other inputs counts once."""
    first = (message.strip().splitlines() or ["(no message)"])[0]
    return _NUMBER.sub("#", first)[:300]


def _check_stats(run: ClassRun, name: str) -> list[dict[str, Any]]:
    """Per check of one exercise: how many students passed and failed it, and the commonest failures."""
    stats: dict[str, dict[str, Any]] = {}
    messages: dict[str, Counter[str]] = {}
    examples: dict[tuple[str, str], str] = {}
    for student in run.students:
        rec = student.records.get(name)
        if rec is None or rec.status == "not_tried":
            continue
        for check in rec.checks:
            row = stats.setdefault(check["id"], {"id": check["id"], "title": check["title"],
                                                 "hidden": bool(check.get("hidden")),
                                                 "max_score": check["max_score"], "passed": 0, "failed": 0})
            if check["status"] in ("passed", "skipped"):
                row["passed"] += 1
                continue
            row["failed"] += 1
            key = _pattern(check["message"])
            messages.setdefault(check["id"], Counter())[key] += 1
            examples.setdefault((check["id"], key), _shortened(check["message"]))
    for check_id, row in stats.items():
        seen = row["passed"] + row["failed"]
        row["pass_rate"] = round(row["passed"] / seen, 4) if seen else None
        row["common_failures"] = [{"message": examples[check_id, key], "count": count}
                                  for key, count in messages.get(check_id, Counter()).most_common(COMMON_FAILURES)]
    return list(stats.values())


def summary(run: ClassRun) -> dict[str, Any]:
    """The class at a glance: totals, and per exercise and check who passed, who failed and why."""
    scores = [totals(run, s)[0] for s in run.students]
    exercises = []
    for exercise in run.course.exercises:
        recs = [s.records[exercise.name] for s in run.students if exercise.name in s.records]
        status = Counter(r.status for r in recs)
        exercises.append({
            "name": exercise.name,
            "position": exercise.position,
            "title": exercise.meta.title,
            "topic": exercise.meta.topic,
            "max_score": max_points(exercise),
            "mean_score": round(statistics.fmean(r.score for r in recs), 3) if recs else None,
            "graded": len(recs),
            **{key: status.get(key, 0) for key in ("passed", "failed", "timeout", "error", "not_tried")},
            "checks": _check_stats(run, exercise.name),
        })
    on, off = run.protections.describe()
    return {
        "course": run.course.meta.title,
        "jax_version": run.context("")["jax_version"],
        "seed": run.seed,
        "students": len(run.students),
        "graded_now": sum(s.graded for s in run.students),
        "reused": sum(not s.graded for s in run.students),
        "platform_errors": [s.entry.student for s in run.students if s.error],
        "max_total": sum(max_points(e) for e in run.course.exercises),
        "mean_total": round(statistics.fmean(scores), 3) if scores else None,
        "median_total": statistics.median(scores) if scores else None,
        "isolation": {**run.protections.as_dict(), "on": on, "off": off},
        "references": run.references,
        "exercises": exercises,
        "totals": {s.entry.student: totals(run, s)[0] for s in run.students},
    }


def student_table(run: ClassRun) -> list[dict[str, Any]]:
    """The students as the report lists them: each exercise's score (or why there is none), and the total."""
    rows = []
    for student in run.students:
        cells = []
        for exercise in run.course.exercises:
            rec = student.records.get(exercise.name)
            cells.append("" if rec is None else "not tried" if rec.status == "not_tried"
                         else "error" if rec.status == "error" else f"{rec.score:g}/{rec.max_score:g}")
        rows.append({"student": student.entry.student, "error": student.error, "cells": cells,
                     "total": totals(run, student)[0]})
    return rows


def write(run: ClassRun) -> tuple[dict[str, Any], list[Path], str]:
    """Write `gradebook.csv`, `summary.json` and `report.html`; return the summary, the files written,
    and why the report could not be made ('' when it was)."""
    from course.instructor import htmlreport

    data = summary(run)
    written = [run.out / "gradebook.csv", run.out / "summary.json"]
    write_atomic(written[0], gradebook_csv(run))
    write_atomic(written[1], json.dumps(data, indent=2))
    if not htmlreport.available():
        return data, written, htmlreport.MISSING
    written.append(htmlreport.write(run.out / "report.html", data, student_table(run)))
    return data, written, ""
