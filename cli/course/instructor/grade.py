"""`course grade`: grade a class, each student from private copies, resumable, one student apart from another.

Every (student, exercise) that needs grading becomes one job; the jobs run through one warm
worker, as many at once as the CPUs and memory allow (`course.instructor.capacity`), each in the
sandbox (`course.engine.contain.sandbox`) where the machine has one. A student's `results.json` is
written atomically as soon as their last job ends, so a crash, a signal (SIGTERM, SIGINT,
SIGHUP) or a shard's time limit loses only the students in flight: a grading the stop ended is
never recorded as theirs, since only a finished grading is a verdict. A rerun reuses every
exercise whose grader and file hashes are unchanged (and that the platform did not fail), unless
asked to regrade. What cannot be graded (a damaged zip, a stray file, a name that maps to no
student) is kept aside with the reason (`course.instructor.layouts`); an entry that holds an archive
that cannot be read is graded from the rest, and named beside them.
"""

from __future__ import annotations

import json
import shutil
import signal
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from course import files
from course.engine.contain import protections
from course.engine.parent import runner
from course.engine.parent.verdict import ExerciseResult
from course.errors import UsageError
from course.files import write_atomic
from course.instructor import capacity, layouts, state
from course.instructor.classrun import ClassRun, Job, Listener, Student
from course.instructor.results import (
    Record,
    file_hash,
    grader_fingerprint,
    record,
    results_json,
    stored_records,
)
from course.instructor.results import untouched as untouched_record
from course.instructor.results import untried as untried_record
from course.instructor.submissions import Entry, untouched
from course.registry import Course, Exercise

STOPPING_SIGNALS = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGKILL}
"""What a grading dies of when the platform stops the job: its signal, or SIGKILL when the warm worker it
was forked from is stopped first (its gradings die with it)."""
STOP_GRACE_S = 2.0


def prepare(course: Course, folder: Path, out: Path, *, only: list[str] | None = None, regrade: bool = False,
            seed: int | None = None, roster: Path | None = None, shard: tuple[int, int] | None = None) -> ClassRun:
    """Read the class and the earlier results, and plan the jobs; nothing is graded yet."""
    from course.instructor import roster as rosters

    inside = folder.resolve() in out.resolve().parents and out.resolve().parent != folder.resolve()
    if out.resolve() == folder.resolve() or inside:
        raise UsageError(f"{out} is the submissions folder or inside a student's entry; write the results elsewhere.")
    intake = layouts.read_class(folder, out=out, roster=rosters.load(roster) if roster else None)
    if shard:
        intake = intake.shard(*shard)
    kept = state.load(out, seed, course)
    run = ClassRun(course, out, course.select(only) if only else course.exercises, kept["seed"],
                   protections.available(), bad=intake.bad, missing=intake.missing, layout=intake.layout)
    run.references = state.kept_references(course, kept)
    for entry in intake.entries:
        add_student(run, entry, regrade=regrade)
    return run


def add_student(run: ClassRun, entry: Entry, *, regrade: bool = False) -> Student:
    """Plan one student: reuse what an earlier run graded of the same files, queue the rest."""
    previous = _previous(run.results_path(entry.student))
    student = Student(entry, dict(previous), unreadable=entry.unreadable())
    if student.unreadable:  # graded from the rest, and named: the run did not see all of it
        why = "; ".join(student.unreadable)
        run.bad.append(layouts.BadEntry(entry.label, f"holds what could not be read: {why}; the rest of it was graded",
                                        entry.student, graded=True))
    for exercise, found in zip(run.exercises, entry.locate(run.exercises).values(), strict=True):
        old = previous.get(exercise.name)
        if not found.tried:
            student.records[exercise.name] = untried_record(exercise, found.note, found.rel, found.cause)
        elif untouched(exercise, found.data):
            student.records[exercise.name] = untouched_record(exercise, found.rel, found.data, run.seed)
        elif regrade or not _reusable(old, exercise, found.data):
            run.jobs.append(Job(student, exercise, found.rel or "", found.data or b"", found.note))
            student.pending += 1
        elif old is not None and old.note != found.note:
            student.records[exercise.name] = Record(**{**old.to_dict(), "note": found.note})
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


def run(plan: ClassRun, *, jobs: int = 0, listener: Listener | None = None) -> ClassRun:
    """Grade every job, as many at once as fit (`jobs` if given); write each student's results as they complete."""
    listener = listener or Listener()
    lock = threading.Lock()
    scratch = Path(tempfile.mkdtemp(prefix="course-class-"))
    cache, confinement = _confinement(plan, scratch)
    worker = runner.start_worker() if len(plan.jobs) > 1 else None
    budget = capacity.Budget.detect()
    threads = jobs or budget.cpus
    slots = capacity.Slots(threads)

    def one(job: Job) -> None:
        """Grade one job from a private copy, then finish its student if it was their last. A grading
        the run's stop ended (or that ended after it) is no verdict: nothing of it is recorded."""
        try:
            with slots.slot(job.exercise.meta.processes):  # a cohort holds a slot per process
                started = time.monotonic()
                rec = _grade(job, plan, scratch, worker, confinement, cache)
        except BaseException:
            plan.stopped.set()  # before the pool kills the other gradings: none of them is a verdict
            raise
        with lock:
            if rec is None or plan.stopped.is_set():
                return
            student = job.student
            student.started = started if student.started is None else min(student.started, started)
            student.ended = time.monotonic()
            student.records[job.exercise.name] = rec
            student.pending -= 1
            done = student.pending == 0
        listener.graded(job, rec)
        if done:
            _finish(plan, student, listener)

    try:
        for student in plan.students:
            if student.pending == 0:
                _finish(plan, student, listener, write=student.changed)
        with capacity.Gauge(budget, slots, fixed=bool(jobs)) as gauge:
            if cache is not None:
                _prewarm(plan, cache, worker, slots, threads, listener)
            runner.map_jobs(one, plan.jobs, threads)
        plan.capacity = {"cpus": budget.cpus, "memory_limit_mb": budget.limit // 2**20, "jobs": slots.size,
                         "per_grading_mb": gauge.per_grading // 2**20, "peak_mb": gauge.peak // 2**20}
        if plan.single is None:  # one submission (an autograder) keeps nothing for later runs
            state.keep_references(plan.out, plan.course, plan.seed, plan.references)
        _restore(plan)
    finally:
        if worker is not None:
            worker.close()
        files.remove_folder(scratch)
    return plan


def _finish(plan: ClassRun, student: Student, listener: Listener, write: bool = True) -> None:
    """Write a student's results (when they changed) and report them."""
    if write:
        _write(plan, student)
    listener.finished(student)


def _confinement(plan: ClassRun, scratch: Path) -> tuple[Path | None, protections.Confinement | None]:
    """The shared compilation cache (None where it cannot be kept read-only) and the sandbox (None where
    the machine has none). A cache every student reads is safe only where none of them can write it."""
    cache = scratch / "xla-cache" if plan.protections.landlock_files and plan.jobs else None
    if cache is not None:
        cache.mkdir()  # before the sandbox names it: a folder that does not exist gets no rule
    if plan.protections.user is not None:
        scratch.chmod(0o711)  # gradings that run as a user of their own reach the cache, and list nothing
    return cache, protections.confinement([str(cache)] if cache else []) if plan.protections.active else None


def _prewarm(plan: ClassRun, cache: Path, worker: Any, slots: capacity.Slots, threads: int,
             listener: Listener) -> None:
    """Grade each reference solution (trusted code) with the class's seed, filling the shared
    compilation cache: a student whose program is the same loads it instead of compiling it.
    Each verdict is kept; a reference that fails under this seed is worth the instructor's look."""
    exercises = [e for e in plan.exercises
                 if e.solution_path.is_file() and any(j.exercise.name == e.name for j in plan.jobs)]
    listener.warming(len(exercises))

    def one(exercise: Exercise) -> str:
        """Grade one reference, holding a slot like any grading."""
        with slots.slot(exercise.meta.processes):
            result = runner.grade(exercise, exercise.solution_path, seed=plan.seed, worker=worker, cache_dir=cache,
                                  hidden=True)
        listener.reference(exercise.name, result.duration_s)
        return result.status

    plan.references.update(zip([e.name for e in exercises], runner.map_jobs(one, exercises, threads), strict=True))


def _grade(job: Job, plan: ClassRun, scratch: Path, worker: Any, confinement: protections.Confinement | None,
           cache: Path | None) -> Record | None:
    """Grade one submitted file from a private copy that only this grading may read; None when the
    grading was stopped from outside rather than finished (no verdict)."""
    stage = Path(tempfile.mkdtemp(dir=scratch))
    private = stage / f"{job.exercise.name}.py"
    private.write_bytes(job.data)
    try:
        result = runner.grade(job.exercise, private, seed=plan.seed, worker=worker, hidden=True, sandbox=confinement,
                              cache_dir=cache, read_only_cache=True, cancel=plan.stopped)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    if result.status == "cancelled" or _stopped_from_outside(result, plan.stopped):
        return None
    return record(job.exercise, result, rel=job.rel, data=job.data, private=str(private), note=job.note)


def _stopped_from_outside(result: ExerciseResult, stopped: threading.Event) -> bool:
    """True when a grading that died of a signal belongs to the run's own stop. A platform that signals
    every process of the job (Slurm, systemd) may reach the grading a moment before this process's
    handler runs, so the stop is given that moment; a learner's code that signals itself, or one
    stopped at its time limit, is still graded for it."""
    return result.ended_by in STOPPING_SIGNALS and result.status != "timeout" and stopped.wait(STOP_GRACE_S)


def _write(plan: ClassRun, student: Student) -> None:
    """Write one student's `results.json` atomically."""
    wall = time.monotonic() - plan.started if plan.single is not None else student.wall_s
    data = results_json(plan.course.exercises, student.records, plan.context(student), execution_time=wall)
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
