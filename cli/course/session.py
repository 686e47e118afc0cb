"""The one owner of a command's state: the course, the workspace's files and each exercise's status.

Commands and `course watch` call its verbs (`check`, `record`, `reset`, `next_hint`, `current`)
and show what they return through `course.ui`; nothing here prints. Progress is written only
here, and only from results the runner verified.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from course import workspace
from course.errors import UsageError
from course.paths import WorkspacePaths
from course.progress import Entry, Progress, ProgressStore, Status, now_iso
from course.registry import Course, Exercise

UNRECORDED = ("error", "cancelled")
"""Results that are no verdict on the learner's file: the platform's failure, a grading stopped on request."""

if TYPE_CHECKING:  # imported only when used, so `course list` stays light
    from course.engine.parent.isolation import Launcher
    from course.engine.parent.verdict import CheckEvent, ExerciseResult
    from course.engine.wire.gate import Gate
    from course.hints import Hint


@dataclass(frozen=True)
class ExerciseRow:
    """One exercise as `course list` and `course progress` show it."""

    position: int
    name: str
    topic: str
    status: Status
    score: float
    max_score: float | None
    last_checked: str | None


@dataclass(frozen=True)
class Summary:
    """The stored progress of a whole course, as `course progress` shows it."""

    course: str
    rows: list[ExerciseRow]

    @property
    def passed(self) -> int:
        """How many exercises pass against their current grader."""
        return sum(r.status == "passed" for r in self.rows)

    @property
    def score(self) -> float:
        """The points the rows show, added up (partial credit counts: SPEC §6)."""
        return sum(r.score for r in self.rows)

    @property
    def max_score(self) -> float:
        """Points the whole course is worth (an unreadable grader counts what it last reported)."""
        return sum(r.max_score or 0.0 for r in self.rows)


class Session:
    """The resolved course and workspace, the stored progress, and the verbs that change them."""

    def __init__(self, context: workspace.Context) -> None:
        self.course: Course = context.course
        self.workspace: Path = context.workspace
        self.paths = WorkspacePaths(context.workspace)
        self._context = context
        self._store = ProgressStore(self.paths)
        self.progress: Progress = self._store.load()
        self.warnings: list[str] = list(self._store.warnings)
        self._recording = threading.Lock()

    @classmethod
    def open(cls, course_dir: Path | None = None, workspace_dir: Path | None = None) -> Session:
        """Find the course and workspace as SPEC §4 says, and load the progress."""
        return cls(workspace.resolve(course_dir, workspace_dir))

    def exercise(self, name: str) -> Exercise:
        """The exercise called `name` (UnknownExercise otherwise)."""
        return self.course.get(name)

    def submission(self, exercise: Exercise) -> Path:
        """The learner's file for `exercise`."""
        return self._context.submission(exercise)

    def status(self, exercise: Exercise) -> Status:
        """passed / failed / stale / not_tried, against the exercise's current grader."""
        return self.progress.status(exercise.name, exercise.grader_hash)

    def rows(self) -> list[ExerciseRow]:
        """Every exercise with its status and points, in course order.

        A row shows the points its last grading earned (none once the file is back to the stub),
        never more than the grader now offers; the course's total is the sum of the rows.
        """
        rows = []
        for e in self.course.exercises:
            entry = self.progress.exercises.get(e.name)
            known = e.max_score if e.max_score is not None else (entry.max_score if entry else None)
            status = self.status(e)
            score = entry.score if entry and status != "not_tried" else 0.0
            rows.append(
                ExerciseRow(
                    position=e.position,
                    name=e.name,
                    topic=e.meta.topic,
                    status=status,
                    score=min(score, known) if known is not None else score,
                    max_score=known,
                    last_checked=entry.last_checked if entry else None,
                )
            )
        return rows

    def summary(self) -> Summary:
        """The stored progress of the whole course."""
        return Summary(course=self.course.meta.title, rows=self.rows())

    def current(self) -> Exercise | None:
        """The first exercise not passed (a stale pass counts as not passed), or None."""
        return next((e for e in self.course.exercises if self.status(e) != "passed"), None)

    def next_pending(self, after: str | None) -> Exercise | None:
        """The first exercise not passed after `after`, else the first not passed at all."""
        exercises = self.course.exercises
        names = [e.name for e in exercises]
        start = names.index(after) + 1 if after in names else 0
        return next((e for e in [*exercises[start:], *exercises[:start]] if self.status(e) != "passed"), None)

    def select(self, names: list[str], *, all_: bool = False) -> list[Exercise]:
        """The exercises a check is about: the named ones, all, or else the current one."""
        now = self.current()
        if all_ or (not names and now is None):
            return self.course.exercises
        if names:
            return self.course.select(names)
        assert now is not None
        return [now]

    def other_files(self, names: list[str]) -> list[tuple[str, Exercise]]:
        """The names given as a path to a file that is not the one graded (a solution, a copy elsewhere),
        each with the exercise it names: the workspace's file of that exercise is what is graded."""
        found = []
        for token in names:
            path = Path(token).expanduser()
            if path.suffix == ".py" and path.is_file():
                exercise = self.exercise(token)
                if path.resolve() != self.submission(exercise).resolve():
                    found.append((token, exercise))
        return found

    def check(
        self,
        exercises: list[Exercise],
        *,
        jobs: int = 1,
        seed: int | None = None,
        worker: Launcher | None = None,
        on_result: Callable[[ExerciseResult], None] | None = None,
        on_event: Callable[[CheckEvent], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> list[ExerciseResult]:
        """Grade `exercises` and record the learner's outcomes; the results in the order given.

        Each exercise is recorded the moment its grading ends, with its own time: a run stopped
        half-way (Ctrl-C) keeps every verdict it had reached.
        """
        by_name = {e.name: e for e in exercises}
        # Set on Ctrl-C: the gradings it kills are no verdict, and are not recorded.
        cancel = cancel if cancel is not None else threading.Event()

        def finished(result: ExerciseResult) -> None:
            """Record one exercise as soon as it is graded, then pass its result on."""
            if result.name in by_name:
                self.record([by_name[result.name]], [result])
            if on_result is not None:
                on_result(result)

        return self.grade(exercises, jobs=jobs, seed=seed, worker=worker, on_result=finished,
                          on_event=on_event, cancel=cancel)

    def grade(
        self,
        exercises: list[Exercise],
        *,
        jobs: int = 1,
        seed: int | None = None,
        worker: Launcher | None = None,
        on_result: Callable[[ExerciseResult], None] | None = None,
        on_event: Callable[[CheckEvent], None] | None = None,
        cancel: threading.Event | None = None,
        gate: Gate | None = None,
    ) -> list[ExerciseResult]:
        """Grade `exercises` without recording anything (`course watch` records on its own thread); with `gate`,
        the gradings get ready now and run once it opens (`course.engine.wire.gate`)."""
        from course.engine.parent.runner import grade_many, start_worker

        pairs = [(e, self.submission(e)) for e in exercises]
        # Several exercises share one warm worker, which saves each but the first JAX's import;
        # one exercise alone gains nothing from it (benchmarks/README.md has the figures).
        own = start_worker(self.paths.cache) if worker is None and len(pairs) > 1 else None
        try:
            results = grade_many(
                pairs,
                jobs=jobs,
                seed=seed,
                on_result=on_result,
                on_event=on_event,
                worker=worker or own,
                cache_dir=self.paths.cache,
                cancel=cancel,
                gate=gate,
            )
        finally:
            if own is not None:
                own.close()
        return results

    def record(self, exercises: list[Exercise], results: list[ExerciseResult]) -> None:
        """Store the learner's outcomes in the progress file: passed, failed, or not tried (a stub, a
        missing file), whichever command graded them; never a platform error or a cancelled grading."""
        with self._recording:  # gradings in parallel finish on threads of their own
            entries = {
                e.name: self._entry(e, "not_tried" if r.not_tried else "passed" if r.passed else "failed", r.score,
                                    r.max_score)
                for e, r in zip(exercises, results, strict=True)
                if r.status not in UNRECORDED
            }
            if entries:
                self.progress = self._store.record(entries)

    def _entry(self, exercise: Exercise, status: Status, score: float, max_score: float) -> Entry:
        """A progress entry that keeps the memory of an earlier pass."""
        before = self.progress.exercises.get(exercise.name)
        once = status == "passed" or (before is not None and (before.passed_once or before.status == "passed"))
        return Entry(status=status, score=0.0 if status == "not_tried" else score,  # type: ignore[arg-type]
                     max_score=max_score or exercise.max_score or 0.0, last_checked=now_iso(),
                     grader_hash=exercise.grader_hash, passed_once=once)

    def reset(self, exercise: Exercise) -> Path | None:
        """Restore the stub, which is then not tried; the learner's version is kept first.
        Returns the backup, if one was made."""
        backup = workspace.reset(self._context, exercise)
        if exercise.name in self.progress.exercises:
            self.progress = self._store.record({exercise.name: self._entry(exercise, "not_tried", 0.0, 0.0)})
        return backup

    def is_stub_now(self, exercise: Exercise) -> bool:
        """True when the learner's file is byte for byte what `reset` writes: there is nothing to keep."""
        return workspace.is_stub_now(self._context, exercise)

    def restore(self, exercise: Exercise) -> tuple[Path, Path | None]:
        """Bring back the latest backup of the learner's file, keeping the current one first.
        Returns (the backup restored, the backup of the file it replaced, if one was made)."""
        return workspace.restore(self._context, exercise)

    def next_hint(self, exercise: Exercise, level: int | None = None) -> Hint:
        """The next hint level of `exercise` (or `level`), remembered for next time."""
        from course import hints

        return hints.next_hint(self.paths.hints, exercise, level)

    def passed_ever(self, exercise: Exercise) -> bool:
        """True once the exercise has passed, even against an older grader, or before a reset."""
        entry = self.progress.exercises.get(exercise.name)
        return self.status(exercise) in ("passed", "stale") or bool(entry and entry.passed_once)

    def last_passed(self) -> Exercise | None:
        """The exercise passed most recently, if any (what `course solution` shows by default)."""
        passed = [(entry.last_checked, e.position, e) for e in self.course.exercises
                  if (entry := self.progress.exercises.get(e.name)) and self.status(e) == "passed"]
        return max(passed, key=lambda t: (t[0], t[1]))[2] if passed else None

    def named_or_current(self, name: str | None) -> Exercise:
        """The exercise `name` names, else the current one; a UsageError once every exercise has passed."""
        if name:
            return self.exercise(name)
        now = self.current()
        if now is None:
            raise UsageError("every exercise has passed, so there is no current one; name one (`course list`).")
        return now


def init_workspace(course_dir: Path | None, target: Path) -> list[Path]:
    """Make a workspace at `target` from the course found as usual; return the files written."""
    context = workspace.resolve(course_dir, None)
    if target.resolve() == context.course.root:
        raise UsageError("that folder is the course itself; give `course init` a new folder.")
    return workspace.init(context.course, target)


def exit_code(results: list[ExerciseResult]) -> int:
    """0 when everything passed, 3 when the platform failed somewhere, otherwise 1."""
    if any(r.status == "error" for r in results):
        return 3
    return 0 if all(r.passed for r in results) else 1
