"""What the commands share: the course and workspace in use, grading with progress, and rendering.

Commands stay thin by calling these functions. This is the only place that writes progress,
and it does so only from results the runner verified.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from course import ui, workspace
from course.errors import UsageError
from course.progress import Entry, Progress, ProgressStore, current, now_iso, status_of
from course.registry import Exercise

if TYPE_CHECKING:  # the runner is imported when grading, so `course list` stays light
    from course.runner import ExerciseResult
    from course.worker import Worker


@dataclass
class Session:
    """The resolved course and workspace, with the stored progress."""

    ctx: workspace.Context
    store: ProgressStore
    progress: Progress

    def status(self, exercise: Exercise) -> str:
        """passed / failed / stale / not_tried."""
        return status_of(self.progress, exercise.name, exercise.grader_hash())

    @property
    def cache_dir(self) -> Path:
        """Where this workspace keeps compiled XLA programs between gradings."""
        return self.ctx.workspace / ".course" / "xla-cache"

    def current(self) -> str | None:
        """The first exercise not passed."""
        return current(self.progress, [(e.name, e.grader_hash()) for e in self.ctx.course.exercises])


def open_session(course_dir: Path | None, workspace_dir: Path | None) -> Session:
    """Resolve the course and workspace and load progress, warning about anything recovered."""
    ctx = workspace.resolve(course_dir, workspace_dir)
    store = ProgressStore(ctx.workspace)
    progress = store.load()
    for message in store.warnings:
        ui.warning(message)
    return Session(ctx=ctx, store=store, progress=progress)


def _rows(state: Session) -> list[dict[str, Any]]:
    """One row per exercise for the list and progress views."""
    rows = []
    for exercise in state.ctx.course.exercises:
        entry = state.progress.exercises.get(exercise.name)
        rows.append(
            {
                "position": exercise.position,
                "name": exercise.name,
                "topic": exercise.meta.topic,
                "status": state.status(exercise),
                "score": entry.score if entry else 0.0,
                "max_score": entry.max_score if entry else 0.0,
                "last_checked": entry.last_checked if entry else None,
            }
        )
    return rows


def render_list(state: Session, *, with_next: bool) -> None:
    """The table of exercises and a progress bar; optionally what to do next."""
    rows = _rows(state)
    now = state.current()
    ui.out.print(ui.exercise_table(state.ctx.course.meta.title, rows, now))
    ui.out.print(ui.bar(sum(r["status"] == "passed" for r in rows), len(rows)))
    if with_next:
        if not state.progress.exercises and state.ctx.course.meta.welcome:
            ui.line(state.ctx.course.meta.welcome)
        if now is None:
            ui.line(state.ctx.course.meta.final or "Every exercise passes.", style="bold green")
        else:
            path = state.ctx.submission(state.ctx.course.get(now))
            ui.line(f"Next: edit {path}, then run `course check` (`course show {now}` for the lesson).")


def check(
    state: Session,
    names: list[str],
    *,
    all_: bool,
    jobs: int,
    seed: int | None,
    quiet: bool,
    worker: Worker | None = None,
) -> list[ExerciseResult]:
    """Grade the selected exercises (default: the current one) and record verified results."""
    from course.runner import grade_many, start_worker

    exercises = _select(state, names, all_)
    pairs = [(e, state.ctx.submission(e)) for e in exercises]
    # Several exercises share one warm worker, which saves each but the first JAX's import;
    # one exercise alone gains nothing from it (benchmarks/README.md has the figures).
    own = start_worker(state.cache_dir) if worker is None and len(pairs) > 1 else None
    try:
        with ui.progress_bar(len(pairs), "grading", enabled=not quiet) as advance:
            results = grade_many(
                pairs,
                jobs=jobs,
                seed=seed,
                on_result=lambda r: advance(r.name),
                worker=worker or own,
                cache_dir=state.cache_dir,
            )
    finally:
        if own is not None:
            own.close()
    _record(state, exercises, results)
    return results


def _select(state: Session, names: list[str], all_: bool) -> list[Exercise]:
    """The exercises a check is about."""
    course = state.ctx.course
    if all_ or (not names and state.current() is None):
        return course.exercises
    if names:
        return course.select(names)
    now = state.current()
    assert now is not None
    return [course.get(now)]


def _record(state: Session, exercises: list[Exercise], results: list[ExerciseResult]) -> None:
    """Store learner outcomes (not platform errors, not untried files) in progress."""
    entries = {}
    for exercise, result in zip(exercises, results, strict=True):
        if result.not_tried or result.status == "error":
            continue
        entries[exercise.name] = Entry(
            status="passed" if result.passed else "failed",
            score=result.score,
            max_score=result.max_score,
            last_checked=now_iso(),
            grader_hash=exercise.grader_hash(),
        )
    if entries:
        state.store.record(entries)
        state.progress = state.store.load()


def exit_code(results: list[ExerciseResult]) -> int:
    """0 all passed, 3 the platform failed somewhere, otherwise 1."""
    if any(r.status == "error" for r in results):
        return 3
    return 0 if all(r.passed for r in results) else 1


def jax_version() -> str:
    """The installed JAX version, read without importing JAX."""
    from importlib import metadata  # slow to import; only `--json` needs it

    try:
        return metadata.version("jax")
    except metadata.PackageNotFoundError:
        return "unknown"


def results_json(state: Session, results: list[ExerciseResult]) -> dict[str, Any]:
    """The `course check --json` object (SPEC §4)."""
    return {
        "course": state.ctx.course.meta.title,
        "jax_version": jax_version(),
        "passed": sum(r.passed for r in results),
        "total": len(results),
        "exercises": [r.to_json() for r in results],
    }


def render_results(state: Session, results: list[ExerciseResult]) -> None:
    """Per-check output for each result, then the next step."""
    for result in results:
        exercise = state.ctx.course.get(result.name)
        ui.result_block(result, str(state.ctx.submission(exercise)))
        ui.line()
    failing = [r for r in results if not r.passed]
    if failing:
        first = failing[0]
        if first.status == "error":
            ui.line("Something is wrong with the course itself, not your code; tell your instructor.", style="bold")
        else:
            ui.line(
                f"Next: fix {state.ctx.submission(state.ctx.course.get(first.name))}, then "
                f"`course check {first.name}`. Stuck? `course hint {first.name}`.",
                style="bold",
            )
        return
    now = state.current()
    if now is None:
        ui.line(state.ctx.course.meta.final or "Every exercise passes.", style="bold green")
    else:
        ui.line(f"Next: `course show {now}` for the next lesson, then `course check`.", style="bold")


def progress_json(state: Session) -> dict[str, Any]:
    """The stored progress as the `course progress --json` object (SPEC §4)."""
    rows = _rows(state)
    return {
        "course": state.ctx.course.meta.title,
        "passed": sum(r["status"] == "passed" for r in rows),
        "total": len(rows),
        "score": sum(r["score"] for r in rows if r["status"] == "passed"),
        "max_score": sum(r["max_score"] for r in rows),
        "exercises": [{k: r[k] for k in ("name", "status", "score", "max_score", "last_checked")} for r in rows],
    }


def render_progress(state: Session, data: dict[str, Any]) -> None:
    """A short summary of stored progress."""
    ui.out.print(ui.bar(data["passed"], data["total"]))
    ui.line(f"Points: {data['score']:g} of {data['max_score']:g} known so far.")
    for row in data["exercises"]:
        when = row["last_checked"] or "never checked"
        ui.out.print(ui.status_text(row["status"]), f" {row['name']}  ({when})", highlight=False)


def reset(state: Session, exercise: Exercise) -> Path | None:
    """Restore a stub, keeping the learner's version."""
    return workspace.reset(state.ctx, exercise)


def init(course_dir: Path | None, target: Path) -> list[Path]:
    """Make a workspace at `target` from the course found as usual."""
    ctx = workspace.resolve(course_dir, None)
    if target.resolve() == ctx.course.root:
        raise UsageError("that folder is the course itself; give `course init` a new folder.")
    return workspace.init(ctx.course, target)
