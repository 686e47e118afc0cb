"""`course validate`: prove each exercise sound, from its files and metadata to what its grader catches.

`course.layout` finds the problems visible without grading; then the stub, the solution and
every wrong variant are graded in parallel by the runner, and each verdict is judged here.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rich.table import Table
from rich.text import Text

from course import layout, ui
from course.registry import Course, Exercise
from course.runner import ExerciseResult, grade_many, start_worker


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
        return layout.rel(self.path, self.exercise.root)


def plan(course: Course, names: list[str]) -> list[Job]:
    """The gradings `validate` will run, for the files that exist."""
    jobs = []
    for exercise in _selected(course, names):
        if not exercise.grader_path.is_file():
            continue
        for role, path in (("stub", exercise.stub_path), ("solution", exercise.solution_path)):
            if path.is_file():
                jobs.append(Job(exercise, role, path))
        jobs += [Job(exercise, "wrong", p) for p in layout.wrong_variants(exercise)]
    return jobs


def validate(
    course: Course, names: list[str], *, jobs: int = 0, on_progress: Callable[[str], None] | None = None
) -> ValidationReport:
    """Check the named exercises (default: all, plus the course's folders) and grade their files."""
    exercises = _selected(course, names)
    reports = [ExerciseReport(e.name, e.position, problems=layout.static_problems(e)) for e in exercises]
    todo = plan(course, names)

    def advance(result: ExerciseResult) -> None:
        """Move the progress bar on, naming the exercise just graded."""
        if on_progress is not None:
            on_progress(result.name)

    # One warm worker serves every grading: each would otherwise import JAX and pytest anew.
    worker = start_worker() if len(todo) > 1 else None
    try:
        pairs = [(j.exercise, j.path) for j in todo]
        results = grade_many(pairs, jobs=jobs or os.cpu_count() or 1, on_result=advance, worker=worker)
    finally:
        if worker is not None:
            worker.close()
    for exercise, report in zip(exercises, reports, strict=True):
        graded = [(j, r) for j, r in zip(todo, results, strict=True) if j.exercise.name == exercise.name]
        _judge(report, exercise, graded)
    problems = [] if names else layout.folder_problems(course)
    return ValidationReport(title=course.meta.title, exercises=reports, problems=problems)


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
        if job.role == "stub":
            report.stub = _judge_stub(report, job, result)
        elif job.role == "solution":
            report.solution = _judge_solution(report, job, result)
    wrong = [(j, r) for j, r in graded if j.role == "wrong"]
    caught = sum(_judge_wrong(report, j, r, ids) for j, r in wrong)
    report.wrong = Verdict(f"{caught}/{len(wrong)} caught" if wrong else "none", caught == len(wrong))


def _crash_problem(exercise: Exercise, job: Job, result: ExerciseResult) -> str:
    """The grader's own failure in instructor's words: nothing collected, or a check that errored."""
    grader = layout.rel(exercise.grader_path, exercise.root)
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
    named = layout.named_check(job.path)
    failed = [c.id for c in result.checks if c.status == "failed"]
    if result.status == "passed" or not failed:
        report.problems.append(f"{path} passes every check; the grader does not catch this mistake.")
        return False
    if named is None:
        return False  # the missing docstring is already one of the static problems
    if ids and named not in ids:
        report.problems.append(
            f"{path} names {named}, which {layout.rel(job.exercise.grader_path, job.exercise.root)} does not define; "
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


def render(report: ValidationReport) -> None:
    """One table of verdicts, then every problem as one sentence, then the summary."""
    table = Table(title=f"Validating {report.title}", title_style="bold", expand=False)
    for column in ("#", "exercise", "stub", "solution", "wrong variants", "problems"):
        table.add_column(column, justify="right" if column in ("#", "problems") else "left")
    for ex in report.exercises:
        table.add_row(
            str(ex.position),
            Text(ex.name, style="" if ex.sound else "bold red"),
            _cell(ex.stub),
            _cell(ex.solution),
            _cell(ex.wrong),
            Text(str(len(ex.problems)), style="green" if ex.sound else "bold red"),
        )
    ui.out.print(table)
    for problem in report.problems:
        ui.out.print(Text.assemble(("✗ ", "bold red"), ("course: ", "bold"), problem))
    for ex in report.exercises:
        for problem in ex.problems:
            ui.out.print(Text.assemble(("✗ ", "bold red"), (f"{ex.name}: ", "bold"), problem))
    n_bad = sum(not e.sound for e in report.exercises)
    if report.sound:
        ui.line(f"All {len(report.exercises)} exercise(s) hold.", style="bold green")
    else:
        ui.line(f"{n_bad} of {len(report.exercises)} exercise(s) need work; fix the files named above.", style="bold")


def _cell(verdict: Verdict | None) -> Text:
    """A verdict as a coloured cell; `-` when there was nothing to grade."""
    if verdict is None:
        return Text("-", style="dim")
    return Text(verdict.text, style="green" if verdict.ok else "bold red")
