"""`report.html`: one self-contained page an instructor works from, made with Jinja2 and matplotlib.

What it shows first: when and how the class was graded (date, course version, seed, what this run
graded and reused), what went wrong (platform errors, entries not graded, students who sent
nothing), the distribution of totals and a table per exercise. Then the students' table (it
scrolls in its own box with the name, total and percentage frozen at the left, and every column
sorts), each exercise's charts and commonest failures, and a panel per student with every check
and message, linked from the table. Jinja2 escapes everything it is given, so a student's message
cannot inject markup. Both libraries come with the `instructor` extra.
"""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from course.files import write_atomic
from course.instructor import charts
from course.instructor.context import commit
from course.instructor.report_template import SORT_SCRIPT, STYLE, TEMPLATE

if TYPE_CHECKING:
    from course.instructor.classrun import ClassRun, Student
    from course.instructor.results import Record

MISSING = "the class report needs the instructor extra: `pip install -e '.[instructor]'`"
MARKS = {"passed": "✓", "failed": "✗", "error": "!", "skipped": "–"}
LABELS = {"passed": "passed", "failed": "failed", "timeout": "timed out", "error": "platform error",
          "not_tried": "not tried"}


def available() -> bool:
    """True when Jinja2 and matplotlib are installed."""
    try:
        import jinja2  # noqa: F401
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _fmt(value: float | None) -> str:
    """A number as people write it; a dash for none."""
    return "–" if value is None else f"{value:.3g}" if isinstance(value, float) and value % 1 else f"{value:g}"


def _pct(value: float | None) -> str:
    """A share as a percentage; a dash for none."""
    return "–" if value is None else f"{100 * value:.0f}%"


def _label(rec: Record) -> str:
    """A record's outcome in words: timeouts and files too large named as such."""
    if rec.cause == "too_large":
        return "file too large"
    if rec.cause == "unreadable":
        return "file unreadable"
    return LABELS.get(rec.status, rec.status)


def _cell(rec: Record | None) -> dict[str, Any]:
    """One exercise of one student in the table: the score, or what happened instead."""
    if rec is None:
        return {"text": "", "sort": -3, "status": ""}
    if rec.status in ("passed", "failed") and not rec.cause:
        return {"text": f"{rec.score:g}/{rec.max_score:g}", "sort": rec.score, "status": rec.status}
    text = {"timeout": f"timed out {rec.score:g}/{rec.max_score:g}"}.get(rec.status, _label(rec))
    return {"text": text, "sort": {"not_tried": -1, "error": -2}.get(rec.status, rec.score),
            "status": rec.cause or rec.status}


def _panel_exercise(exercise: Any, rec: Record) -> dict[str, Any]:
    """One exercise in a student's panel: outcome, file, and each check with its message."""
    checks = [{"mark": MARKS.get(c["status"], "?"), "status": c["status"], "title": c["title"], "score": c["score"],
               "max_score": c["max_score"], "message": c["message"] if c["status"] != "passed" else "",
               "hidden": bool(c.get("hidden"))} for c in rec.checks]
    why = rec.message if rec.status in ("timeout", "error", "not_tried") or rec.cause or not rec.checks else ""
    return {"position": exercise.position, "name": exercise.name, "status": rec.status, "label": _label(rec),
            "score": rec.score, "max_score": rec.max_score, "file": rec.file, "note": rec.note, "why": why,
            "checks": checks, "open": rec.status not in ("passed", "not_tried")}


def _student(run: ClassRun, student: Student, top: float) -> dict[str, Any]:
    """A student's row of the table and their panel."""
    total = run.total(student)
    exercises = [(e, student.records.get(e.name)) for e in run.course.exercises]
    return {"id": student.entry.student, "anchor": f"student-{student.entry.student}", "name": student.entry.name,
            "entry": student.entry.label, "note": student.note, "error": student.error, "total": total,
            "percent": f"{100 * total / top:.0f}", "cells": [_cell(rec) for _, rec in exercises],
            "exercises": [_panel_exercise(e, rec) for e, rec in exercises if rec is not None]}


def _charts(run: ClassRun, summary: dict[str, Any]) -> tuple[str, dict[str, tuple[str, str]], int]:
    """The totals chart (students who tried something), each tried exercise's two charts, and how many
    students tried nothing (not drawn)."""
    active = [s for s in run.students if any(r.status != "not_tried" for r in s.records.values())]
    left_out = len(run.students) - len(active)
    total = charts.totals([run.total(s) for s in active], summary["max_total"], left_out)
    per = {e["name"]: (charts.scores(e, [r.score for r in run.tried(e["name"])]), charts.pass_rates(e))
           for e in summary["exercises"] if e["tried"]}
    return total, per, left_out


def render(run: ClassRun, summary: dict[str, Any]) -> str:
    """The page for a graded class and its `summary` (from `course.instructor.gradebook`)."""
    import jinja2

    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    top = summary["max_total"] or 1
    totals_chart, exercise_charts, left_out = _charts(run, summary)
    digest = base64.b64encode(hashlib.sha256(SORT_SCRIPT.encode()).digest()).decode()
    return env.from_string(TEMPLATE).render(
        s=summary, date=run.generated_at, commit=commit(run.course.root), style=STYLE, script=SORT_SCRIPT,
        script_hash=f"sha256-{digest}", totals_chart=totals_chart, exercise_charts=exercise_charts, left_out=left_out,
        students=[_student(run, s, top) for s in run.students], fmt=_fmt, pct=_pct,
        bad_references=[name for name, status in summary["references"].items() if status != "passed"],
    )


def write(path: Path, run: ClassRun, summary: dict[str, Any]) -> Path:
    """Write the page atomically; return its path."""
    write_atomic(path, render(run, summary))
    return path
