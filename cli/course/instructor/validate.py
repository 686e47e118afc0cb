"""`course validate`: prove each exercise sound, from its files and metadata to what its grader catches.

`course.instructor.checks` finds the problems visible without grading; then the stub, the solution and
every wrong variant are graded in parallel by the runner, and each verdict is judged here.
"""

from __future__ import annotations

import secrets
import tempfile
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from course.engine.parent.runner import ExerciseResult, grade_many, start_worker
from course.instructor import checks
from course.registry import Course, Exercise

if TYPE_CHECKING:
    from course.engine.parent.isolation import Launcher


@dataclass(frozen=True)
class Verdict:
    """One cell of the table: what happened, and whether that is what soundness needs."""

    text: str
    ok: bool


@dataclass
class ExerciseReport:
    """One exercise's verdicts on its stub, solution and wrong variants, and its problems."""

    name: str
    position: int
    stub: Verdict | None = None
    solution: Verdict | None = None
    wrong: Verdict | None = None
    problems: list[str] = field(default_factory=list)
    gradings: list[tuple[Job, ExerciseResult]] = field(default_factory=list, repr=False)
    """Each grading behind the verdicts, with its file: for a caller that reads the messages too."""

    @property
    def sound(self) -> bool:
        """True when nothing is wrong with this exercise."""
        return not self.problems


@dataclass
class ValidationReport:
    """The whole run: one report per exercise and the course-level problems."""

    title: str
    exercises: list[ExerciseReport]
    problems: list[str] = field(default_factory=list)

    @property
    def sound(self) -> bool:
        """True when the course and every selected exercise hold."""
        return not self.problems and all(e.sound for e in self.exercises)

    @property
    def exit_code(self) -> int:
        """0 when everything holds, 1 when something is unsound."""
        return 0 if self.sound else 1


@dataclass(frozen=True)
class Job:
    """One grading to run: a file of `exercise` in a `role` (stub, solution or wrong)."""

    exercise: Exercise
    role: str
    path: Path

    @property
    def rel(self) -> str:
        """The graded file, relative to the course root."""
        return checks.rel(self.path, self.exercise.root)


def plan(course: Course, names: list[str], variants: Collection[str] | None = None) -> list[Job]:
    """The gradings `validate` will run, for the files that exist (of the wrong variants, only those named
    in `variants`, by file stem, when it is given)."""
    jobs = []
    for exercise in _selected(course, names):
        if not exercise.grader_path.is_file():
            continue
        for role, path in (("stub", exercise.stub_path), ("solution", exercise.solution_path)):
            if path.is_file():
                jobs.append(Job(exercise, role, path))
        jobs += [Job(exercise, "wrong", p) for p in checks.wrong_variants(exercise)
                 if variants is None or p.stem in variants]
    return jobs


def validate(
    course: Course, names: list[str], *, jobs: int = 0, on_result: Callable[[ExerciseResult], None] | None = None,
    warm: tuple[Launcher | None, Path] | None = None, variants: Collection[str] | None = None,
) -> ValidationReport:
    """Check the named exercises (default: all, plus the course's folders) and grade their files;
    `on_result` hears of each grading as it ends (for progress). `warm` lends a warm worker and the
    compilation cache it was started with, for a caller that validates one exercise after another;
    `variants` grades only the wrong variants of those file stems (with the stub and the solution)."""
    from course.instructor.capacity import default_jobs

    exercises = _selected(course, names)
    reports = [ExerciseReport(e.name, e.position, problems=checks.static_problems(e)) for e in exercises]
    todo = plan(course, names, variants)
    results = _grade_all(todo, jobs or default_jobs(), on_result, warm)
    for exercise, report in zip(exercises, reports, strict=True):
        report.gradings = [(j, r) for j, r in zip(todo, results, strict=True) if j.exercise.name == exercise.name]
        _judge(report, exercise, report.gradings)
    problems = [] if names else checks.folder_problems(course)
    return ValidationReport(title=course.meta.title, exercises=reports, problems=problems)


def _grade_all(todo: list[Job], jobs: int, on_result: Callable[[ExerciseResult], None] | None,
               warm: tuple[Launcher | None, Path] | None) -> list[ExerciseResult]:
    """Grade every planned file, `jobs` at a time, in the plan's order (each exercise's solution early).

    One warm worker serves every grading (each would otherwise import JAX and pytest anew), and
    they share one seed and a compilation cache made for this run (or lent with the worker): the
    grader's own programs, the same for every file of an exercise, are compiled once. Compile events
    fire on a cache hit too, so compile counts are unchanged; the files are the course's own, so
    sharing is safe."""
    seed = secrets.randbelow(2**31)
    if warm is not None:
        return grade_many([(j.exercise, j.path) for j in todo], jobs=jobs, seed=seed, on_result=on_result,
                          worker=warm[0], cache_dir=warm[1], hidden=True, skip_stub=False)
    with tempfile.TemporaryDirectory(prefix="course-validate-") as scratch:
        cache = Path(scratch)
        worker = start_worker(cache) if len(todo) > 1 else None
        try:
            return grade_many([(j.exercise, j.path) for j in todo], jobs=jobs, seed=seed, on_result=on_result,
                              worker=worker, cache_dir=cache, hidden=True, skip_stub=False)
        finally:
            if worker is not None:
                worker.close()


def _selected(course: Course, names: list[str]) -> list[Exercise]:
    """The named exercises in course order, or all of them (unknown names are a usage error)."""
    return course.select(names) if names else course.exercises


def _judge(report: ExerciseReport, exercise: Exercise, graded: list[tuple[Job, ExerciseResult]]) -> None:
    """Fill in the verdicts and problems from the gradings of one exercise."""
    crashed = [(j, r) for j, r in graded if r.status == "error"]
    if crashed:
        report.problems.append(_crash_problem(exercise, *crashed[0]))
    ids = next((_ids(r) for _, r in graded if r.checks), set())
    for job, result in graded:
        if result.tampered:
            # A stub or a variant must fail on its own mistake: tripping the guard fails every check
            # at once and proves nothing about the grader (often a library the guard does not know).
            report.problems.append(f"{job.rel} was failed for tampering ({_brief(result.message)}); the course's "
                                   "own files must fail on their mistakes, so find what tripped the guard.")
    _judge_points(report, exercise, graded)
    for job, result in graded:
        if job.role == "stub":
            report.stub = _judge_stub(report, job, result)
        elif job.role == "solution":
            report.solution = _judge_solution(report, job, result)
    wrong = [(j, r) for j, r in graded if j.role == "wrong"]
    caught = sum(_judge_wrong(report, j, r, ids) for j, r in wrong)
    report.wrong = Verdict(f"{caught}/{len(wrong)} caught" if wrong else "none", caught == len(wrong))


def _judge_points(report: ExerciseReport, exercise: Exercise, graded: list[tuple[Job, ExerciseResult]]) -> None:
    """The points `course list` reads from the grader's marks must be the points its checks report."""
    reported = next((r.max_score for _, r in graded if r.checks), None)
    parts = (exercise.max_score, exercise.hidden_max_score)
    static = None if None in parts else sum(p or 0.0 for p in parts)
    if reported is None or static == reported:
        return
    grader = checks.rel(exercise.grader_path, exercise.root)
    if static is None:
        report.problems.append(
            f"the points of {grader} cannot be read without running it; give each check a literal "
            "`@pytest.mark.points(n)` and parametrize over literal lists, so `course list` knows the total."
        )
    else:
        report.problems.append(
            f"{grader} (with its hidden checks) reads as {static:g} points from its marks but its checks report "
            f"{reported:g}; keep every check a plain `test_` function with a literal points mark."
        )


def _crash_problem(exercise: Exercise, job: Job, result: ExerciseResult) -> str:
    """The grader's own failure in instructor's words: nothing collected, or a check that errored."""
    grader = checks.rel(exercise.grader_path, exercise.root)
    if not result.checks:
        # The runner's message ends with advice for learners; keep only what happened.
        detail = _brief(result.message.split(". This is a problem")[0])
        return f"{grader} has no check that runs ({detail}); it needs at least one `test_` function pytest collects."
    errored = next((c for c in result.checks if c.status == "error"), None)
    where, message = (errored.id, errored.message) if errored else ("its run", result.message)
    return f"{grader} failed itself in {where} while grading {job.rel}: {_brief(message)}."


def _judge_stub(report: ExerciseReport, job: Job, result: ExerciseResult) -> Verdict:
    """A stub must fail at least one check, and quickly."""
    if result.status == "error":
        return Verdict("! error", False)
    if result.status == "passed":
        report.problems.append(f"{job.rel} already passes every check; a stub must leave the work to the learner.")
        return Verdict("✗ passes", False)
    if result.status == "timeout":
        report.problems.append(
            f"{job.rel} ran past the {job.exercise.meta.timeout_s:g} s limit; "
            "a stub should fail fast (raise NotImplementedError)."
        )
        return Verdict("✗ timed out", False)
    return Verdict("✓ fails", True)


def _judge_solution(report: ExerciseReport, job: Job, result: ExerciseResult) -> Verdict:
    """The reference solution must pass every check."""
    if result.status == "passed":
        return Verdict("✓ passes", True)
    if result.status == "error":
        return Verdict("! error", False)
    bad = [c for c in result.checks if c.status not in ("passed", "skipped")]
    if result.status == "timeout":
        why = f"ran past the {job.exercise.meta.timeout_s:g} s limit"
    else:
        first = _brief(bad[0].message) if bad else _brief(result.message)
        why = f"fails {', '.join(c.id for c in bad) or 'its grading'} (seed {result.seed}): {first}"
    report.problems.append(f"{job.rel} {why}; the reference solution must pass every check.")
    return Verdict(f"✗ fails {len(bad)}/{len(result.checks)}" if bad else "✗ fails", False)


def _judge_wrong(report: ExerciseReport, job: Job, result: ExerciseResult, ids: set[str]) -> bool:
    """A wrong variant must fail, and fail the check its docstring names; True when it is caught."""
    if result.status == "error":
        return False
    path = job.rel
    named = checks.named_check(job.path)
    failed = [c.id for c in result.checks if c.status == "failed"]
    if result.status == "passed" or not failed:
        report.problems.append(f"{path} passes every check; the grader does not catch this mistake.")
        return False
    if named is None:
        return False  # the missing docstring is already one of the static problems
    if ids and named not in ids:
        report.problems.append(
            f"{path} names {named}, which {checks.rel(job.exercise.grader_path, job.exercise.root)} does not define; "
            "fix its docstring or the check's name."
        )
        return False
    if named not in failed:
        report.problems.append(
            f"{path} fails {', '.join(failed)} but not {named}, the check its docstring names (seed {result.seed})."
        )
        return False
    return True


def _ids(result: ExerciseResult) -> set[str]:
    """The check ids the grader defines, as one grading reported them."""
    return {c.id for c in result.checks}


def _brief(message: str, limit: int = 200) -> str:
    """The first line of a message, cut to `limit` characters, without a final full stop."""
    first = (message.strip().splitlines() or [""])[0].rstrip(". ")
    return first if len(first) <= limit else first[: limit - 1] + "…"
