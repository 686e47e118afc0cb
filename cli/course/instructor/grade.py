"""`course grade`: grade a class, each student from private copies, resumable, one student apart from another.

Every (student, exercise) that needs grading becomes one job; the jobs run `jobs` at a time
through one warm worker, each in the sandbox (`course.engine.sandbox`) where the machine has
one. A student's `results.json` is written atomically as soon as their last job ends, so a
crash or Ctrl-C loses only the students in flight. A rerun reuses every exercise whose grader
and file hashes are unchanged (and that the platform did not fail), unless asked to regrade.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from course.engine import runner, sandbox
from course.errors import UsageError
from course.files import write_atomic
from course.instructor import submissions
from course.instructor.results import Record, file_hash, grader_fingerprint, record, results_json, stored_records
from course.instructor.results import untried as untried_record
from course.progress import now_iso
from course.registry import Course, Exercise

STATE_FILE = ".grading.json"
"""In the output folder: the class's seed, so students graded in a later run get the same inputs."""
RESULTS = "results.json"


@dataclass
class Student:
    """One student of the run: their entry, their records (old and new), and the jobs still to run."""

    entry: submissions.Entry
    records: dict[str, Record]
    pending: int = 0
    graded: bool = False
    """True when something of theirs was graded in this run (not all reused), or they are new."""
    changed: bool = False
    """True when their results file must be written (graded, or a record changed without grading)."""
    written: bytes = b""
    """What this run wrote to their results file, to restore it if anything changed it since."""

    @property
    def error(self) -> bool:
        """True when the platform failed on one of their exercises."""
        return any(r.status == "error" for r in self.records.values())


@dataclass(frozen=True)
class Job:
    """One exercise of one student to grade, with the bytes of the submitted file."""

    student: Student
    exercise: Exercise
    rel: str
    data: bytes


@dataclass
class ClassRun:
    """A whole `course grade` run: what was asked, and every student's records at the end."""

    course: Course
    out: Path
    exercises: list[Exercise]
    seed: int
    protections: sandbox.Protections
    students: list[Student] = field(default_factory=list)
    jobs: list[Job] = field(default_factory=list)
    references: dict[str, str] = field(default_factory=dict)
    """How each reference solution fared under the class's seed, when it was graded to fill the cache."""
    single: Path | None = None
    """Where the results go when the run grades one submission (the Gradescope autograder)."""

    def results_path(self, student: str) -> Path:
        """Where a student's `results.json` is written."""
        return self.single if self.single is not None else self.out / student / RESULTS

    @property
    def exit_code(self) -> int:
        """0 when every student was graded, 3 when the platform failed for some student."""
        return 3 if any(s.error for s in self.students) else 0

    def context(self, student: str) -> dict[str, Any]:
        """What `extra_data` says about the grading itself."""
        return {
            "course": self.course.meta.title,
            "student": student,
            "jax_version": _version("jax"),
            "course_version": _version("course"),
            "seed": self.seed,
            "graded_at": now_iso(),
            "isolation": self.protections.as_dict(),
        }


def _version(package: str) -> str:
    """An installed package's version, without importing it."""
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "unknown"


def prepare(course: Course, folder: Path, out: Path, *, only: list[str] | None = None, regrade: bool = False,
            seed: int | None = None) -> ClassRun:
    """Read the class and the earlier results, and plan the jobs; nothing is graded yet."""
    inside = folder.resolve() in out.resolve().parents and out.resolve().parent != folder.resolve()
    if out.resolve() == folder.resolve() or inside:
        raise UsageError(f"{out} is the submissions folder or inside a student's entry; write the results elsewhere.")
    entries = submissions.entries(folder, out=out)
    run = ClassRun(course, out, course.select(only) if only else course.exercises, _seed(out, seed),
                   sandbox.available())
    for entry in entries:
        add_student(run, entry, regrade=regrade)
    return run


def add_student(run: ClassRun, entry: submissions.Entry, *, regrade: bool = False) -> Student:
    """Plan one student: reuse what an earlier run graded of the same files, queue the rest."""
    previous = _previous(run.results_path(entry.student))
    student = Student(entry, dict(previous))
    for exercise, found in zip(run.exercises, entry.locate(run.exercises).values(), strict=True):
        old = previous.get(exercise.name)
        if not found.tried:
            student.records[exercise.name] = untried_record(exercise, found.note, found.rel)
        elif regrade or not _reusable(old, exercise, found.data):
            run.jobs.append(Job(student, exercise, found.rel or "", found.data or b""))
            student.pending += 1
    # Graded now: something runs, or the student is new. Unchanged records are not written again.
    student.graded = student.pending > 0 or not previous
    student.changed = student.graded or student.records != previous
    run.students.append(student)
    return student


def _reusable(old: Record | None, exercise: Exercise, data: bytes | None) -> bool:
    """True when an earlier grading of the same file against the same graders stands."""
    return (old is not None and old.status != "error" and old.file_sha256 == file_hash(data)
            and old.grader == grader_fingerprint(exercise))


def _previous(path: Path) -> dict[str, Record]:
    """The records of an earlier run, or none when its file is missing or damaged."""
    try:
        return stored_records(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return {}


def _seed(out: Path, seed: int | None) -> int:
    """The class's seed: the one given, else the one an earlier run kept, else a new one (kept)."""
    state = out / STATE_FILE
    if seed is None:
        try:
            seed = int(json.loads(state.read_text(encoding="utf-8"))["seed"])
        except (OSError, ValueError, KeyError, TypeError):
            seed = secrets.randbelow(2**31)
    write_atomic(state, json.dumps({"seed": seed}))
    return seed


def run(plan: ClassRun, *, jobs: int = 0, on_student: Callable[[Student], None] | None = None) -> ClassRun:
    """Grade every job, `jobs` at a time; write each student's results as they complete."""
    lock = threading.Lock()
    scratch = Path(tempfile.mkdtemp(prefix="course-class-"))
    cache, confinement = _confinement(plan, scratch)
    worker = runner.start_worker() if len(plan.jobs) > 1 else None
    jobs = jobs or os.cpu_count() or 1

    def finish(student: Student) -> None:
        """Write a student's results and report them."""
        _write(plan, student)
        if on_student is not None:
            on_student(student)

    def one(job: Job) -> None:
        """Grade one job from a private copy, then finish its student if it was their last."""
        rec = _grade(job, plan.seed, scratch, worker, confinement, cache)
        with lock:
            job.student.records[job.exercise.name] = rec
            job.student.pending -= 1
            done = job.student.pending == 0
        if done:
            finish(job.student)

    try:
        for student in plan.students:
            if student.pending == 0 and student.changed:
                finish(student)
            elif student.pending == 0 and on_student is not None:
                on_student(student)
        if cache is not None:
            _prewarm(plan, cache, worker, jobs)
        runner.map_jobs(one, plan.jobs, jobs)
        _restore(plan)
    finally:
        if worker is not None:
            worker.close()
        shutil.rmtree(scratch, ignore_errors=True)
    return plan


def _confinement(plan: ClassRun, scratch: Path) -> tuple[Path | None, sandbox.Confinement | None]:
    """The shared compilation cache (None where it cannot be kept read-only) and the sandbox (None where
    the machine has none). A cache every student reads is safe only where none of them can write it."""
    cache = scratch / "xla-cache" if plan.protections.landlock_files and plan.jobs else None
    if cache is not None:
        cache.mkdir()  # before the sandbox names it: a folder that does not exist gets no rule
    return cache, sandbox.confinement([str(cache)] if cache else []) if plan.protections.active else None


def _prewarm(plan: ClassRun, cache: Path, worker: Any, jobs: int) -> None:
    """Grade each reference solution (trusted code) with the class's seed, filling the shared
    compilation cache: a student whose program is the same loads it instead of compiling it.
    Each verdict is kept; a reference that fails under this seed is worth the instructor's look."""
    pairs = [(e, e.solution_path) for e in plan.exercises
             if e.solution_path.is_file() and any(j.exercise.name == e.name for j in plan.jobs)]
    results = runner.grade_many(pairs, jobs=jobs, seed=plan.seed, worker=worker, cache_dir=cache, hidden=True)
    plan.references = {e.name: r.status for (e, _), r in zip(pairs, results, strict=True)}


def _grade(job: Job, seed: int, scratch: Path, worker: Any, confinement: sandbox.Confinement | None,
           cache: Path | None) -> Record:
    """Grade one submitted file from a private copy that only this grading may read."""
    stage = Path(tempfile.mkdtemp(dir=scratch))
    private = stage / f"{job.exercise.name}.py"
    private.write_bytes(job.data)
    try:
        result = runner.grade(job.exercise, private, seed=seed, worker=worker, hidden=True, sandbox=confinement,
                              cache_dir=cache, read_only_cache=True)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return record(job.exercise, result, rel=job.rel, data=job.data, private=str(private))


def _write(plan: ClassRun, student: Student) -> None:
    """Write one student's `results.json` atomically."""
    data = results_json(plan.course.exercises, student.records, plan.context(student.entry.student))
    student.written = json.dumps(data, indent=2).encode()
    write_atomic(plan.results_path(student.entry.student), student.written)


def _restore(plan: ClassRun) -> None:
    """Put back any results file of this run that was changed after it was written. Where the
    sandbox has no file restrictions, code graded later could otherwise rewrite a classmate's."""
    for student in plan.students:
        path = plan.results_path(student.entry.student)
        try:
            intact = not student.written or path.read_bytes() == student.written
        except OSError:
            intact = False
        if not intact:
            write_atomic(path, student.written)
