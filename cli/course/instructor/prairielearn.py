"""`course autograder prairielearn`: each exercise as a PrairieLearn question graded by an external grader.

PrairieLearn runs a question's external grader in a container: the course's shared files in
`/grade/serverFilesCourse`, the student's files in `/grade/student`, the question's data in
`/grade/data/data.json`; the entrypoint must write `/grade/results/results.json` with `gradable`,
`score` (a fraction of 1) and `tests` (`name`, `points`, `max_points`, `message`, `output`).

What is written, in PrairieLearn's course layout:

- `serverFilesCourse/course_grader/`: the grading copy of the course (public and hidden graders,
  no solutions), `run.sh` (the entrypoint) and a `Dockerfile` for the grading image (JAX and the
  course installed: the container has no network);
- `questions/<name>/`: `info.json` (external grading on, the image, the entrypoint, the timeout,
  and `COURSE_EXERCISE` in its environment) and `question.html` (the lesson, an editor holding
  the stub, the grader's results).

PrairieLearn shows students everything the grader returns, at once: so hidden checks count in
the score as one test that names none of them and says nothing of why. A submission with nothing
to grade (no file, the untouched stub, a file too large) is `gradable: false`, which costs the
student no attempt; so is a grading the platform itself failed.
"""

from __future__ import annotations

import argparse
import contextlib
import html
import json
import math
import os
import sys
import tempfile
import time
import traceback
import uuid
from pathlib import Path
from typing import Any

from course.files import write_atomic
from course.registry import COURSE_FILE, Course, Exercise

GRADER = "course_grader"
STARTUP_S = 60
"""What a question's grading needs beyond its exercise's own caps: the container's start, Python's and
JAX's imports, stopping a run at a cap (its stack is asked for first) and writing the results."""
ENTRYPOINT = f"/grade/serverFilesCourse/{GRADER}/run.sh"
RESULTS_MODE = 0o644
"""`results.json` is readable by all, whatever the container's umask: the grader host reads it as its own user."""

RUN_SH = """#!/usr/bin/env bash
# PrairieLearn's external grader runs this in the grading container for every submission: grade
# the file in $GRADE_ROOT/student (default /grade) for the exercise in $COURSE_EXERCISE and write
# $GRADE_ROOT/results/results.json. Whatever happens, a results file is written.
ROOT="${GRADE_ROOT:-/grade}"
PY="${GRADER_PYTHON:-python3}"
RESULTS="$ROOT/results/results.json"
mkdir -p "$ROOT/results"
rm -f "$RESULTS"
"$PY" -m course.instructor.prairielearn --course "$ROOT/serverFilesCourse/course_grader/course" \\
    --student "$ROOT/student" --exercise "${COURSE_EXERCISE:-}" --results "$RESULTS" 2>&1
code=$?
if [ ! -s "$RESULTS" ]; then
    cat > "$RESULTS" <<EOF
{"gradable": false, "score": 0, "tests": [],
 "message": "The grader failed before it could grade this submission (exit code $code); this is not your mistake.",
 "format_errors": ["the grader failed (exit code $code); tell your instructor"]}
EOF
fi
exit 0
"""

DOCKERFILE = """# The image PrairieLearn's external grader runs: Python, the course's pinned JAX and the course.
# Build it from this folder and push it where PrairieLearn can pull it; give its name to
# `course autograder prairielearn --image`.
FROM python:3.11-slim
COPY course /opt/course/source
RUN python -m venv /opt/course/venv && /opt/course/venv/bin/pip install --no-cache-dir /opt/course/source \\
    && useradd --system --no-create-home --shell /usr/sbin/nologin course-grader
ENV PATH=/opt/course/venv/bin:$PATH
"""


def _uuid(found: Course, exercise: Exercise) -> str:
    """A question's UUID, the same on every run for the same course and exercise."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"course:{found.meta.title}:{exercise.name}")).upper()


def info_json(found: Course, exercise: Exercise, image: str) -> dict[str, Any]:
    """A question's `info.json`: external grading by this course's grader."""
    return {
        "uuid": _uuid(found, exercise),
        "title": exercise.meta.title,
        "topic": exercise.meta.topic,
        "tags": ["course", exercise.name],
        "type": "v3",
        "singleVariant": True,
        "gradingMethod": "External",
        "externalGradingOptions": {
            "enabled": True,
            "image": image,
            "serverFilesCourse": [f"{GRADER}/"],
            "entrypoint": ENTRYPOINT,
            "timeout": question_timeout(exercise),
            "environment": {"COURSE_EXERCISE": exercise.name},
        },
    }


def question_timeout(exercise: Exercise) -> int:
    """PrairieLearn's timeout for a question, above every cap the grading applies: the exercise's wall-clock
    cap (above its CPU limit, which a busy grader host spends more slowly), with room for start-up. A
    grading the course stops at a cap then says so in its own words, never in PrairieLearn's generic timeout."""
    from course.engine.contain import limits

    caps = limits.budget(exercise.meta)
    return math.ceil(max(caps.cpu_s, caps.wall_s) + STARTUP_S)


def question_html(exercise: Exercise) -> str:
    """A question's page: the lesson (as text), an editor holding the stub, and the grader's results."""
    lesson = exercise.lesson_path.read_text(encoding="utf-8") if exercise.lesson_path.is_file() else ""
    return (
        "{{=<% %>=}}\n"  # the lesson's code may hold `{{`: Mustache's delimiters are changed first
        f"<pl-question-panel>\n<pre style=\"white-space: pre-wrap\">{html.escape(lesson)}</pre>\n"
        f"<pl-file-editor file-name=\"{exercise.name}.py\" ace-mode=\"ace/mode/python\" "
        "source-file-name=\"tests/initial_code.py\"></pl-file-editor>\n</pl-question-panel>\n"
        "<pl-submission-panel>\n<pl-external-grader-results></pl-external-grader-results>\n"
        "<pl-file-preview></pl-file-preview>\n</pl-submission-panel>\n"
    )


def files(found: Course, image: str) -> dict[str, bytes]:
    """Every file written, by its path in PrairieLearn's course layout."""
    from course.instructor.release import files as course_files
    from course.stubs import handed_out

    out = {f"serverFilesCourse/{GRADER}/run.sh": RUN_SH.encode(),
           f"serverFilesCourse/{GRADER}/Dockerfile": DOCKERFILE.encode()}
    for rel, source in course_files(found, hidden=True).items():
        out[f"serverFilesCourse/{GRADER}/course/{rel.as_posix()}"] = (
            source if isinstance(source, bytes) else source.read_bytes())
    for exercise in found.exercises:
        folder = f"questions/{exercise.name}"
        stub = handed_out(exercise) or exercise.stub_path.read_bytes()
        out[f"{folder}/info.json"] = (json.dumps(info_json(found, exercise, image), indent=2) + "\n").encode()
        out[f"{folder}/question.html"] = question_html(exercise).encode()
        out[f"{folder}/tests/initial_code.py"] = stub
    return out


def write(found: Course, out: Path, image: str) -> list[Path]:
    """Write the questions and the grader under `out` (a PrairieLearn course, or a folder to copy into one)."""
    written = []
    for rel, data in sorted(files(found, image).items()):
        path = out / rel
        write_atomic(path, data)
        if rel.endswith("/run.sh"):
            os.chmod(path, 0o755)
        written.append(path)
    return written


# ---- inside PrairieLearn's grading container ---------------------------------------------------------


def _test(rec: Any, check: dict[str, Any]) -> dict[str, Any]:
    """One public check as a PrairieLearn test."""
    return {"name": check["title"], "description": check["id"], "points": check["score"],
            "max_points": check["max_score"], "message": check["message"], "output": check.get("output", "")}


def pl_results(exercise: Exercise, rec: Any) -> dict[str, Any]:
    """A record as PrairieLearn's results: `score` a fraction, a test per public check, the hidden ones
    as one test without names or messages; nothing to grade (or a platform failure) is not gradable."""
    from course.instructor.results import visible_line

    if rec.status == "error" or rec.cause or (rec.status == "not_tried" and not rec.checks):
        why = ("the grader itself failed; tell your instructor" if rec.status == "error" else rec.message)
        return {"gradable": False, "score": 0, "message": why, "format_errors": [why], "tests": []}
    public = [c for c in rec.checks if not c.get("hidden")]
    hidden = [c for c in rec.checks if c.get("hidden")]
    tests = [_test(rec, c) for c in public]
    if hidden:
        tests.append({"name": "Checks kept for grading", "description": "", "message": "",
                      "points": sum(c["score"] for c in hidden), "max_points": sum(c["max_score"] for c in hidden)})
    top = rec.max_score or 1
    line = visible_line(exercise, rec)
    return {"gradable": True, "score": round(min(1.0, max(0.0, rec.score / top)), 6), "message": line,
            "tests": tests}


def publish(results: Path, data: dict[str, Any]) -> None:
    """Write `results.json` readable by all, in a folder all may enter, whatever the container's umask:
    the grader host reads it as its own user, which need not be the container's."""
    write_atomic(results, json.dumps(data, indent=2), mode=RESULTS_MODE)
    with contextlib.suppress(OSError):  # a folder the platform made and keeps is the platform's
        os.chmod(results.parent, results.parent.stat().st_mode & 0o7777 | 0o755)


def grade_question(course_dir: Path, student: Path, name: str, results: Path) -> int:
    """Grade the student's file for exercise `name` and write PrairieLearn's results; 0, or 3 on a platform failure."""
    from course.engine.contain import protections
    from course.errors import RegistryError, UsageError
    from course.instructor import budget, classrun, grade, state, submissions
    from course.registry import load_course

    if not (course_dir / COURSE_FILE).is_file():
        raise RegistryError(f"{course_dir} holds no {COURSE_FILE}; copy serverFilesCourse/{GRADER} whole.")
    found = load_course(course_dir.resolve())
    if not name:
        raise UsageError("COURSE_EXERCISE is not set; the question's info.json names its exercise there.")
    exercise = found.get(name)
    student.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="course-pl-") as scratch:
        run = classrun.ClassRun(found, Path(scratch), [exercise], state.course_seed(found), protections.available(),
                                single=Path(scratch) / "results.json")
        graded = grade.add_student(run, submissions.Entry.of("student", student), regrade=True)
        # One file: graded at once, without warming a compilation cache with the reference first (which
        # would cost as long again), within the exercise's own caps and so within the question's timeout.
        within = question_timeout(exercise) - STARTUP_S / 2
        budget.grade_within(run, budget.Budget(within, time.monotonic()), lambda left: None)
    data = pl_results(exercise, graded.records[exercise.name])
    publish(results, data)
    sys.stdout.write(f"{name}: {graded.records[exercise.name].status}, score {data['score']}\n")
    return run.exit_code


def main(argv: list[str]) -> int:
    """`python -m course.instructor.prairielearn --course C --student S --exercise N --results R` (run.sh)."""
    parser = argparse.ArgumentParser(prog="course.instructor.prairielearn")
    for option in ("--course", "--student", "--results"):
        parser.add_argument(option, type=Path, required=True)
    parser.add_argument("--exercise", default="")
    args = parser.parse_args(argv)
    try:
        return grade_question(args.course, args.student, args.exercise, args.results)
    except BaseException as exc:  # noqa: BLE001 - whatever failed, PrairieLearn must get a results file
        why = f"the grader failed ({type(exc).__name__}: {exc}); tell your instructor"
        publish(args.results, {"gradable": False, "score": 0, "message": why, "format_errors": [why], "tests": []})
        sys.stdout.write(traceback.format_exc())
        return 3


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
