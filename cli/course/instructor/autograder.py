"""`course autograder`: the same grading, handed to Gradescope (a bundle) or GitHub Classroom (a workflow).

Gradescope runs `setup.sh` once to build its image and `run_autograder` in a fresh container per
submission; `run_autograder` calls `python -m course.instructor.autograder` here, which grades
`$AUTOGRADER_ROOT/submission` with `course grade`'s engine (hidden checks included), one exercise
after another within the run's budget (`course.instructor.budget`), and rewrites
`$AUTOGRADER_ROOT/results/results.json` as each one ends, with the grading log on stdout
(instructors only). If anything fails, a results file still says so and scores 0. GitHub
Classroom runs a workflow in the student's own repository: one step per exercise through the
command grader (`course check NAME`, all or nothing), then the grading reporter. PrairieLearn
is `course.instructor.prairielearn`.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import re
import sys
import time
import traceback
import zipfile
from pathlib import Path
from typing import Any

from course.files import write_atomic
from course.instructor import budget
from course.registry import COURSE_FILE, Course, Exercise

BUNDLE_COURSE = "course"
"""The folder of the bundle that holds the grading copy of the course (with hidden checks, no solutions)."""
WORKFLOW = Path(".github", "workflows", "classroom.yml")
PYTHON_VERSION = "3.11"

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, while it builds the autograder's image: install the course and its
# pinned JAX into a virtual environment that run_autograder uses.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
VENV="${AUTOGRADER_VENV:-/autograder/venv}"
apt-get update -qq
apt-get install -y -qq python3 python3-venv python3-pip >/dev/null
PY=python3
if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    apt-get install -y -qq python3.11 python3.11-venv >/dev/null
    PY=python3.11
fi
# Submitted code is graded as this user, never as root (docs/security.md).
id -u course-grader >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin course-grader
"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet "$HERE/course"
"$VENV/bin/python" -c 'import course, jax; print("course ready, JAX", jax.__version__)'
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope copies this script to /autograder/run_autograder and runs that copy for every
# submission, from /autograder, with the bundle unpacked in /autograder/source: so the course is
# found from $AUTOGRADER_ROOT/source (default /autograder/source), never beside the script.
# It grades $AUTOGRADER_ROOT/submission and writes $AUTOGRADER_ROOT/results/results.json; the
# grading log goes to stdout, which Gradescope shows to instructors only. Whatever happens, a
# results file is written; if grading itself failed, it says so and scores 0. The whole run keeps
# within a budget of BUDGET seconds, set by `course autograder gradescope --budget`: keep it under
# the assignment's timeout on Gradescope (AUTOGRADER_BUDGET_S overrides it).
STARTED="${EPOCHREALTIME:-}"
ROOT="${AUTOGRADER_ROOT:-/autograder}"
BUDGET="${AUTOGRADER_BUDGET_S:-@BUDGET@}"
SOURCE="$ROOT/source"
PY="${AUTOGRADER_PYTHON:-${AUTOGRADER_VENV:-/autograder/venv}/bin/python}"
RESULTS="$ROOT/results/results.json"
mkdir -p "$ROOT/results"
rm -f "$RESULTS"
cd "$ROOT" || true
"$PY" -m course.instructor.autograder --course "$SOURCE/course" --submission "$ROOT/submission" \\
    --results "$RESULTS" --metadata "$ROOT/submission_metadata.json" --budget "$BUDGET" \\
    --started "$STARTED" 2>&1
code=$?
if [ ! -s "$RESULTS" ]; then
    cat > "$RESULTS" <<EOF
{"score": 0, "execution_time": 0, "stdout_visibility": "hidden", "tests": [],
 "extra_data": {"autograder_exit": $code},
 "output": "The autograder failed before it could grade this submission (exit code $code); \\
this is not your mistake: tell your instructor."}
EOF
fi
exit 0
"""


def bundle_files(found: Course, budget_s: float = budget.DEFAULT_BUDGET_S) -> dict[str, bytes]:
    """Every file of the Gradescope bundle: the two scripts (run_autograder knowing its budget) and the
    grading copy of the course."""
    from course.instructor.release import files

    run = RUN_AUTOGRADER.replace("@BUDGET@", f"{budget_s:g}")
    out = {"setup.sh": SETUP_SH.encode(), "run_autograder": run.encode()}
    for rel, source in files(found, hidden=True).items():
        out[f"{BUNDLE_COURSE}/{rel.as_posix()}"] = source if isinstance(source, bytes) else source.read_bytes()
    return out


def gradescope(found: Course, out: Path, budget_s: float = budget.DEFAULT_BUDGET_S) -> Path:
    """Write `autograder.zip` for Gradescope, each run within `budget_s` seconds; the scripts are executable
    at its root."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in sorted(bundle_files(found, budget_s).items()):
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if name in ("setup.sh", "run_autograder") else 0o644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    write_atomic(out, buffer.getvalue())
    return out


def step_id(exercise: Exercise) -> str:
    """The workflow step id of an exercise (the reporter reads `<ID>_RESULTS`)."""
    return re.sub(r"[^a-z0-9]+", "-", exercise.name.lower()).strip("-")


def _points(value: float) -> int | float:
    """Points as the workflow writes them: a whole number when they are one."""
    return int(value) if float(value).is_integer() else value


def classroom_workflow(found: Course) -> dict[str, Any]:
    """The GitHub Classroom workflow: install the course, one command-grader step per exercise, the reporter."""
    graders = [
        {
            "name": exercise.name,
            "id": step_id(exercise),
            "uses": "classroom-resources/autograding-command-grader@v1",
            "with": {
                "test-name": exercise.name,
                "setup-command": "",
                "command": f"course check {exercise.name}",
                "timeout": max(1, math.ceil(exercise.meta.timeout_s / 60)) + 1,
                "max-score": _points(exercise.max_score or 0.0),
            },
        }
        for exercise in found.exercises
    ]
    reporter = {
        "name": "Autograding Reporter",
        "uses": "classroom-resources/autograding-grading-reporter@v1",
        "env": {f"{g['id'].upper()}_RESULTS": f"${{{{steps.{g['id']}.outputs.result}}}}" for g in graders},
        "with": {"runners": ",".join(g["id"] for g in graders)},
    }
    setup = [
        {"name": "Checkout code", "uses": "actions/checkout@v4"},
        {"name": "Set up Python", "uses": "actions/setup-python@v5", "with": {"python-version": PYTHON_VERSION}},
        {"name": "Install the course", "run": "pip install -e ."},
    ]
    return {
        "name": "Autograding Tests",
        "on": ["push", "repository_dispatch"],
        "permissions": {"checks": "write", "actions": "read", "contents": "read"},
        "jobs": {"run-autograding-tests": {
            "runs-on": "ubuntu-latest",
            "if": "github.actor != 'github-classroom[bot]'",
            "steps": [*setup, *graders, reporter],
        }},
    }


def classroom(found: Course, out: Path) -> Path:
    """Write `.github/workflows/classroom.yml` under `out` (the student repository, or a release)."""
    import yaml

    text = "# GitHub Classroom autograding for this course, written by `course autograder classroom`.\n"
    text += yaml.safe_dump(classroom_workflow(found), sort_keys=False, width=100)
    path = out / WORKFLOW
    write_atomic(path, text)
    return path


# ---- inside Gradescope's container -------------------------------------------------------------


def crash_results(reason: str, detail: str = "") -> dict[str, Any]:
    """What a run that could not grade writes: score 0, and what failed in plain words."""
    return {
        "score": 0,
        "execution_time": 0,
        "output": f"The autograder failed before it could grade this submission ({reason}); "
                  "this is not your mistake: tell your instructor.",
        "stdout_visibility": "hidden",
        "tests": [],
        "extra_data": {"error": reason, "traceback": detail[-4000:]},
    }


def _submitters(metadata: Path | None) -> str:
    """Who submitted, by name, from Gradescope's `submission_metadata.json` ('' when it says nothing)."""
    try:
        data = json.loads(metadata.read_text(encoding="utf-8")) if metadata else {}
    except (OSError, ValueError):
        return ""
    users = data.get("users") if isinstance(data, dict) else None
    return ", ".join(str(u["name"]) for u in users or [] if isinstance(u, dict) and u.get("name"))


def log_lines(name: str, rec: Any) -> list[str]:
    """One exercise's grading log, for instructors only (Gradescope's stdout): every check, hidden too,
    and what each check's code printed."""
    lines = [f"{name}: {rec.status}, {rec.score:g}/{rec.max_score:g} in {rec.duration_s:.1f} s"
             + (f" ({rec.file})" if rec.file else "")]
    for check in rec.checks:
        first = (check["message"].splitlines() or [""])[0][:300]
        hidden = " (hidden)" if check.get("hidden") else ""
        lines.append(f"  {check['status']:>7}  {check['id']}{hidden}: {first}".rstrip(": "))
        lines += [f"           | {line}" for line in check.get("output", "").splitlines()[:40]]
    if not rec.checks and rec.message:
        lines.append(f"  {rec.message.splitlines()[0][:300]}")
    return lines


def grade_submission(course_dir: Path, submission: Path, results: Path, metadata: Path | None = None,
                     budget_s: float = budget.DEFAULT_BUDGET_S, started: float | None = None) -> int:
    """Grade one Gradescope submission within `budget_s` seconds and write its results as each exercise
    ends, the log on stdout; 0, or 3 when the platform failed. `started` is when the run began (epoch seconds)."""
    from course import ui
    from course.engine.contain import protections
    from course.errors import RegistryError
    from course.instructor import classrun, grade, state, submissions
    from course.registry import load_course

    clock = budget.Budget.since(budget_s, started)
    if not (course_dir / COURSE_FILE).is_file():
        raise RegistryError(f"{course_dir} holds no {COURSE_FILE}: the bundle is not unpacked where run_autograder "
                            "looks for it ($AUTOGRADER_ROOT/source/course); upload the zip `course autograder` wrote.")
    found = load_course(course_dir.resolve())
    ui.raw(f"grading {submission} against {found.meta.title} ({len(found.exercises)} exercises) "
           f"within {budget_s:g} s\n")
    run = classrun.ClassRun(found, results.parent, found.exercises, state.course_seed(found), protections.available(),
                         single=results, started=clock.started)
    submission.mkdir(parents=True, exist_ok=True)  # an empty upload is "not tried", not a crash
    entry = submissions.Entry.of("submission", submission, name=_submitters(metadata))
    student = grade.add_student(run, entry, regrade=True)
    logged: set[str] = set()

    def progress(left: list[Any]) -> None:
        """Log each exercise as it ends, then write the results as they stand (a stopped run keeps both): logged
        first, so that an exercise results.json holds is in the log too, whenever the run is killed."""
        pending = {j.exercise.name for j in left}
        for name, rec in student.records.items():
            if name not in pending and name not in logged:
                logged.add(name)
                ui.raw("".join(line + "\n" for line in log_lines(name, rec)))
        _write_results(run, student, [j.exercise for j in left])

    budget.grade_within(run, clock, progress)
    ui.raw(f"seed {run.seed}; {time.monotonic() - clock.started:.1f} s in all of a budget of {budget_s:g} s; "
           f"results in {results}\n")
    return run.exit_code


NOT_GRADED = ("not graded: the autograder was stopped before it graded this exercise (at Gradescope's timeout, "
              "or out of memory); this is not your mistake: submit again, or tell your instructor")


def _write_results(run: Any, student: Any, left: list[Exercise]) -> None:
    """Write the results as they stand: what was graded, and each exercise not graded yet said to be
    not graded, so that a run stopped now still leaves a results file that says what it did."""
    from course.instructor.results import Record, grader_fingerprint, max_points, results_json

    graded = {name: rec for name, rec in student.records.items() if name not in {e.name for e in left}}
    context, wall = run.context(student), time.monotonic() - run.started
    data = results_json(run.course.exercises, graded, context, execution_time=wall)
    if left:
        # Kept as the platform's failure (never reused, never the student's), but said in words of its own.
        holders = {e.name: Record(e.name, "error", 0.0, max_points(e), NOT_GRADED, grader=grader_fingerprint(e))
                   for e in left}
        whole = results_json(run.course.exercises, {**graded, **holders}, context, execution_time=wall)
        data["tests"], data["extra_data"] = whole["tests"], {**whole["extra_data"], "not_graded": list(holders)}
        lines = [f"{e.name}: not graded, 0/{min(max_points(e), e.max_score or 0.0):g}" for e in left]
        lines.append(f"Not graded: {', '.join(holders)}. The autograder was stopped before it graded them; "
                     "they score 0 here.")
        data["output"] = "\n".join(filter(None, [data["output"], *lines]))
    _publish(run.single, json.dumps(data, indent=2))


def _publish(path: Path, text: str) -> None:
    """Replace `path` atomically with a file others may read (the umask's mode, as Gradescope's harness
    may read it as another user), never a half-written one."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o666))  # the umask decides, as for any new file
    write_atomic(path, text, keep_mode=True)


def main(argv: list[str]) -> int:
    """`python -m course.instructor.autograder --course C --submission S --results R`, as run_autograder calls it."""
    parser = argparse.ArgumentParser(prog="course.instructor.autograder")
    for name in ("--course", "--submission", "--results"):
        parser.add_argument(name, type=Path, required=True)
    parser.add_argument("--metadata", type=Path, default=None)
    parser.add_argument("--budget", type=float, default=budget.DEFAULT_BUDGET_S)
    parser.add_argument("--started", type=budget.epoch, default=None)
    args = parser.parse_args(argv)
    try:
        return grade_submission(args.course, args.submission, args.results, args.metadata, args.budget, args.started)
    except BaseException as exc:  # noqa: BLE001 - whatever failed, Gradescope must get a results file
        _publish(args.results, json.dumps(crash_results(f"{type(exc).__name__}: {exc}", traceback.format_exc())))
        sys.stdout.write(traceback.format_exc())
        return 3


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
