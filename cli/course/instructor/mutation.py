"""`course validate --mutants`: grade every mutant of each reference solution and say which survive.

Each exercise's solution is graded first: it must pass (else its mutants prove nothing), and its
time sets the mutants' limits. Then every mutant is graded as `course validate` grades a wrong
variant (one warm worker, the gradings in parallel, one compilation cache for the run) and judged:
killed (by the first check it fails: its grading stops there, unless every check is asked for),
survived, equivalent (recorded in exercise.toml with a reason), timed out, not compiling (not valid
Python, or failing while imported), or error (the grader's own).
"""

from __future__ import annotations

import dataclasses
import secrets
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from course.engine.parent.runner import ExerciseResult, grade_many, start_worker
from course.instructor import mutants as making
from course.instructor.mutant_operators import OPERATORS
from course.instructor.mutants import Mutant
from course.registry import Course, Exercise

STATUSES = ("killed", "survived", "equivalent", "timeout", "not_compiling", "error")
IMPORT_FAILURE = "so no check can run"
"""How the grading words a file that fails while imported (`course.engine.common.submission`)."""
SLOWER = 4.0
MIN_LIMIT_S = 15.0
"""A mutant may take `SLOWER` times its solution's grading (at least `MIN_LIMIT_S` seconds, at most
the exercise's own limits): a mutant that hangs (a wait nothing signals) then costs seconds, not
the wall cap of minutes, and still counts as timed out."""


@dataclass(frozen=True)
class Outcome:
    """What the grading made of one mutant."""

    mutant: Mutant
    status: str
    checks: tuple[str, ...] = ()
    """The checks that failed it (killed): the first, or every one when every check ran."""
    reason: str = ""
    """Why it is equivalent, or what went wrong (error)."""
    seconds: float = 0.0
    """How long its grading took (0 when it was not graded)."""

    def to_json(self) -> dict[str, Any]:
        """One mutant of the `--json` report."""
        m = self.mutant
        return {"number": m.number, "operator": m.operator, "line": m.line, "label": m.label,
                "status": self.status, "checks": list(self.checks), "reason": self.reason,
                "duration_s": round(self.seconds, 2), "diff": m.diff}


@dataclass
class ExerciseMutation:
    """One exercise's mutants and what became of them."""

    name: str
    position: int
    outcomes: list[Outcome] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    """Recorded equivalents that matched no mutant."""

    @property
    def counts(self) -> Counter[str]:
        """Mutants per status."""
        return Counter(o.status for o in self.outcomes)

    @property
    def score(self) -> float | None:
        """Killed or timed out, over those and the survivors; None when there are none."""
        c = self.counts
        caught = c["killed"] + c["timeout"]
        return caught / (caught + c["survived"]) if caught + c["survived"] else None

    @property
    def survivors(self) -> list[Outcome]:
        """The mutants that passed every check and that no recorded equivalent explains."""
        return [o for o in self.outcomes if o.status == "survived"]

    def to_json(self) -> dict[str, Any]:
        """One exercise of the `--json` report."""
        score = self.score
        return {"name": self.name, "position": self.position, "mutants": len(self.outcomes),
                **{s: self.counts[s] for s in STATUSES},
                "score": None if score is None else round(score, 4),
                "grading_s": round(sum(o.seconds for o in self.outcomes), 1), "problems": self.problems,
                "stale_equivalents": self.stale, "outcomes": [o.to_json() for o in self.outcomes]}


@dataclass
class MutationReport:
    """The whole run."""

    title: str
    exercises: list[ExerciseMutation]
    seed: int
    per_operator: int
    duration_s: float = 0.0
    every_check: bool = False
    """Every check ran on each mutant; else a mutant's grading stopped at the first check it failed."""

    @property
    def exit_code(self) -> int:
        """0 when every mutant is caught or explained and every solution passes; 1 otherwise."""
        return 1 if any(e.survivors or e.problems for e in self.exercises) else 0

    def to_json(self) -> dict[str, Any]:
        """The `--json` report: per exercise, then totals, then the operators' table."""
        totals = sum((e.counts for e in self.exercises), Counter())
        return {"course": self.title, "seed": self.seed, "per_operator": self.per_operator,
                "every_check": self.every_check,
                "duration_s": round(self.duration_s, 1), "exit_code": self.exit_code,
                "exercises": [e.to_json() for e in self.exercises],
                "totals": {"mutants": sum(totals.values()), **{s: totals[s] for s in STATUSES}},
                "operators": {name: op.summary for name, op in OPERATORS.items()}}


def plan(course: Course, names: list[str], per_operator: int) -> dict[str, list[Mutant]]:
    """The mutants of each selected exercise that has a grader and a solution."""
    chosen = course.select(names) if names else course.exercises
    return {e.name: making.make(e, per_operator) for e in chosen
            if e.grader_path.is_file() and e.solution_path.is_file()}


def run(course: Course, planned: dict[str, list[Mutant]], *, jobs: int, per_operator: int,
        on_result: Callable[[ExerciseResult], None] | None = None, every_check: bool = False) -> MutationReport:
    """Grade each planned exercise's solution, then its mutants (each up to the first check it fails,
    unless `every_check`), and judge them."""
    started, seed = time.monotonic(), secrets.randbelow(2**31)
    exercises = [course.get(name) for name in planned]
    report = MutationReport(course.meta.title, [ExerciseMutation(e.name, e.position) for e in exercises], seed,
                            per_operator, every_check=every_check)
    with tempfile.TemporaryDirectory(prefix="course-mutants-") as scratch:
        cache = Path(scratch) / "cache"
        worker = start_worker(cache)
        try:
            grade = _grader(jobs, seed, worker, cache, on_result, first_failure=not every_check)
            solutions = grade([(e, e.solution_path) for e in exercises])
            todo = _jobs(exercises, solutions, planned, report, Path(scratch))
            results = grade([(e, path) for e, path, _ in todo])
        finally:
            if worker is not None:
                worker.close()
    for (exercise, _, mutant), result in zip(todo, results, strict=True):
        outcome = dataclasses.replace(judge(exercise, mutant, result), seconds=result.duration_s)
        _entry(report, exercise.name).outcomes.append(outcome)
    for exercise, entry in zip(exercises, report.exercises, strict=True):
        entry.outcomes.sort(key=lambda o: o.mutant.number)
        entry.stale = making.stale(exercise, planned[exercise.name])
    report.duration_s = time.monotonic() - started
    return report


def _grader(jobs: int, seed: int, worker: Any, cache: Path, on_result: Callable[[ExerciseResult], None] | None,
            *, first_failure: bool) -> Callable[[list[tuple[Exercise, Path]]], list]:
    """Grade pairs the way `course validate` does: hidden checks too, stubs graded, one cache; with
    `first_failure`, each grading stops at the first check that fails (a mutant needs one to be killed)."""

    def grade(pairs: list[tuple[Exercise, Path]]) -> list[ExerciseResult]:
        """The results in the order given."""
        return grade_many(pairs, jobs=jobs, seed=seed, on_result=on_result, worker=worker, cache_dir=cache,
                          hidden=True, skip_stub=False, first_failure=first_failure)

    return grade


def _jobs(exercises: list[Exercise], solutions: list[ExerciseResult], planned: dict[str, list[Mutant]],
          report: MutationReport, scratch: Path) -> list[tuple[Exercise, Path, Mutant]]:
    """The gradings of every mutant whose solution passed, each in a file of its own; those that do
    not compile are judged at once."""
    todo = []
    for exercise, solution in zip(exercises, solutions, strict=True):
        entry = _entry(report, exercise.name)
        if solution.status != "passed":
            entry.problems.append(f"its reference solution is {solution.status} under seed {solution.seed}, so its "
                                  "mutants prove nothing; `course validate` says why.")
            continue
        limited = _limited(exercise, solution.duration_s)
        for mutant in planned[exercise.name]:
            if not mutant.compiles:
                entry.outcomes.append(Outcome(mutant, "not_compiling", reason="not valid Python"))
                continue
            path = scratch / exercise.folder / f"m{mutant.number}" / exercise.solution_path.name
            path.parent.mkdir(parents=True)
            path.write_text(mutant.source, encoding="utf-8")
            todo.append((limited, path, mutant))
    return todo


def _limited(exercise: Exercise, seconds: float) -> Exercise:
    """The exercise with limits fit for its mutants: `SLOWER` times its solution's time."""
    meta = exercise.meta
    cpu = min(meta.timeout_s, max(MIN_LIMIT_S, SLOWER * seconds))
    wall = min(meta.wall_timeout_s or 5 * meta.timeout_s, 2 * cpu)
    return dataclasses.replace(exercise, meta=dataclasses.replace(meta, timeout_s=cpu, wall_timeout_s=wall))


def _entry(report: MutationReport, name: str) -> ExerciseMutation:
    """The report's entry for one exercise."""
    return next(e for e in report.exercises if e.name == name)


def judge(exercise: Exercise, mutant: Mutant, result: ExerciseResult) -> Outcome:
    """One mutant's outcome from its grading."""
    if result.status == "timeout":
        return Outcome(mutant, "timeout", reason=result.message.splitlines()[0] if result.message else "")
    if result.status == "error":
        return Outcome(mutant, "error", reason=(result.message.strip().splitlines() or [""])[0])
    if result.status == "passed":
        reason = making.equivalent(exercise, mutant)
        return Outcome(mutant, "survived") if reason is None else Outcome(mutant, "equivalent", reason=reason)
    if result.tampered:
        return Outcome(mutant, "killed", ("the guard",))
    failed = [c for c in result.checks if c.status in ("failed", "error")]
    if failed and all(IMPORT_FAILURE in c.message for c in failed):
        first = failed[0].message.splitlines()[0]
        return Outcome(mutant, "not_compiling", reason=first)
    return Outcome(mutant, "killed", tuple(c.id for c in failed) or ("its grading",))
