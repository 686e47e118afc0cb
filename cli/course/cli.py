"""The `course` command line: each command parses, calls the engine, renders, and exits."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from course import hints as hint_store
from course import session, ui
from course.entry import failure_code
from course.errors import CourseError, UsageError

app = typer.Typer(
    help="Graded exercises for JAX Performance & Distributed.\n\n"
    "Edit the file of the current exercise, run `course check`, read what each check says, "
    "repeat. `course list` shows where you are.",
    add_completion=False,
    invoke_without_command=True,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

CourseOpt = Annotated[
    Path | None,
    typer.Option("--course", help="Folder holding course.toml (default: found from here).", show_default=False),
]
WorkspaceOpt = Annotated[
    Path | None,
    typer.Option(
        "--workspace",
        "-w",
        help="Folder with your files and progress (default: the course folder, or the workspace you are in).",
        show_default=False,
    ),
]
F = TypeVar("F", bound=Callable[..., Any])


def guarded(func: F) -> F:
    """Turn CourseErrors into one sentence and their exit code; anything else is exit 3."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (typer.Exit, typer.Abort):
            raise
        except (CourseError, KeyboardInterrupt, Exception) as exc:
            code = failure_code(exc)
            if code is None:
                raise
            raise typer.Exit(code) from None

    return wrapper  # type: ignore[return-value]


@app.callback()
@guarded
def root(ctx: typer.Context, course: CourseOpt = None, workspace: WorkspaceOpt = None) -> None:
    """Without a command: the list of exercises and what to do next."""
    if ctx.invoked_subcommand is None:
        state = session.open_session(course, workspace)
        session.render_list(state, with_next=True)


@app.command("list")
@guarded
def list_(course: CourseOpt = None, workspace: WorkspaceOpt = None) -> None:
    """Show every exercise with its topic, status and points."""
    session.render_list(session.open_session(course, workspace), with_next=False)


@app.command()
@guarded
def check(
    names: Annotated[
        list[str] | None, typer.Argument(help="Exercises to grade (default: the current one).", show_default=False)
    ] = None,
    all_: Annotated[bool, typer.Option("--all", help="Grade every exercise.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout and nothing else.")] = False,
    jobs: Annotated[
        int, typer.Option("--jobs", "-j", help="Exercises graded at once (default: number of cores).", min=0)
    ] = 0,
    seed: Annotated[int | None, typer.Option("--seed", help="Repeat the random inputs of an earlier run.")] = None,
    course: CourseOpt = None,
    workspace: WorkspaceOpt = None,
) -> None:
    """Grade exercises and say, check by check, what holds and what does not."""
    state = session.open_session(course, workspace)
    results = session.check(state, names or [], all_=all_, jobs=jobs or os.cpu_count() or 1, seed=seed, quiet=as_json)
    if as_json:
        ui.emit_json(session.results_json(state, results))
    else:
        session.render_results(state, results)
    raise typer.Exit(session.exit_code(results))


@app.command()
@guarded
def show(
    name: Annotated[str, typer.Argument(help="The exercise.")],
    course: CourseOpt = None,
    workspace: WorkspaceOpt = None,
) -> None:
    """Print the lesson and task, and the path of the file to edit."""
    state = session.open_session(course, workspace)
    exercise = state.ctx.course.get(name)
    ui.lesson(exercise.lesson_path.read_text(encoding="utf-8"))
    ui.line(f"Edit: {state.ctx.submission(exercise)}", style="bold")


@app.command()
@guarded
def hint(
    name: Annotated[str, typer.Argument(help="The exercise.")],
    level: Annotated[
        int | None,
        typer.Option("--level", "-l", help="Show this level (1 is a nudge, the last nearly the answer).", min=1),
    ] = None,
    course: CourseOpt = None,
    workspace: WorkspaceOpt = None,
) -> None:
    """Show hints one level at a time: each call reveals the next."""
    state = session.open_session(course, workspace)
    exercise = state.ctx.course.get(name)
    shown, total, text = hint_store.next_hint(state.ctx.workspace, exercise, level)
    ui.line(f"Hint {shown} of {total} for {name}:", style="bold")
    ui.line(text)
    if shown < total:
        ui.info(f"`course hint {name}` again for the next level.")


@app.command()
@guarded
def reset(
    name: Annotated[str, typer.Argument(help="The exercise.")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    course: CourseOpt = None,
    workspace: WorkspaceOpt = None,
) -> None:
    """Restore the stub; your version is kept as a backup in .course/backups/."""
    state = session.open_session(course, workspace)
    exercise = state.ctx.course.get(name)
    if not yes:
        if not sys.stdin.isatty():
            raise UsageError(f"`course reset {name}` replaces your file; add --yes to confirm.")
        typer.confirm(f"Restore the stub of {name}? Your version is kept as a backup.", abort=True)
    backup = session.reset(state, exercise)
    ui.line(f"Restored {state.ctx.submission(exercise)}.")
    if backup is not None:
        ui.line(f"Your version is kept at {backup}.")


@app.command()
@guarded
def solution(
    name: Annotated[str, typer.Argument(help="The exercise.")],
    course: CourseOpt = None,
    workspace: WorkspaceOpt = None,
) -> None:
    """Show the reference solution, once the exercise has passed."""
    state = session.open_session(course, workspace)
    exercise = state.ctx.course.get(name)
    if state.status(exercise) not in ("passed", "stale"):
        ui.error(f"`{name}` has not passed yet; the solution opens once `course check {name}` passes.")
        raise typer.Exit(1)
    ui.out.file.write(exercise.solution_path.read_text(encoding="utf-8"))


@app.command("progress")
@guarded
def progress_(
    as_json: Annotated[bool, typer.Option("--json", help="Print the stored progress as JSON.")] = False,
    course: CourseOpt = None,
    workspace: WorkspaceOpt = None,
) -> None:
    """Summarize what has passed, the points, and the last results (grades nothing)."""
    state = session.open_session(course, workspace)
    data = session.progress_json(state)
    if as_json:
        ui.emit_json(data)
    else:
        session.render_progress(state, data)


@app.command()
@guarded
def init(
    directory: Annotated[Path, typer.Argument(help="Folder to make into a workspace.")],
    course: CourseOpt = None,
) -> None:
    """Make a fresh workspace holding the stubs and nothing else."""
    made = session.init(course, directory)
    ui.line(f"Workspace ready at {directory.resolve()} ({len(made)} files).")
    ui.line(f"Next: cd {directory} && course check")


@app.command()
@guarded
def new(
    name: Annotated[str, typer.Argument(help="The new exercise's name: a-z, 0-9 and _, at most 40 characters.")],
    topic: Annotated[str, typer.Option("--topic", "-t", help="Short topic shown in `course list`, e.g. donation.")],
    course: CourseOpt = None,
) -> None:
    """Scaffold an exercise, its grader, solution and wrong/ folder, and add it to course.toml."""
    # Imported here: instructor commands should cost the learner's commands nothing at start-up.
    from course import scaffold, workspace

    found = workspace.resolve(course).course
    made = scaffold.new_exercise(found, name, topic)
    ui.line(f"Made `{name}` at position {len(found.meta.exercises) + 1}:", style="bold")
    for path in made:
        ui.line(f"  {path.relative_to(found.root)}")
    ui.line(f"Next: fill in every TODO (docs/authoring.md shows how), then `course validate {name}`.")


@app.command()
@guarded
def validate(
    names: Annotated[
        list[str] | None, typer.Argument(help="Exercises to validate (default: all).", show_default=False)
    ] = None,
    jobs: Annotated[
        int, typer.Option("--jobs", "-j", help="Gradings run at once (default: number of cores).", min=0)
    ] = 0,
    course: CourseOpt = None,
) -> None:
    """Prove exercises sound: stubs fail, solutions pass, every wrong variant is caught."""
    # Imported here: instructor commands should cost the learner's commands nothing at start-up.
    from course import validate as soundness
    from course import workspace

    found = workspace.resolve(course).course
    with ui.progress_bar(len(soundness.plan(found, names or [])), "validating") as advance:
        report = soundness.validate(found, names or [], jobs=jobs, on_progress=advance)
    soundness.render(report)
    raise typer.Exit(report.exit_code)


@app.command()
@guarded
def watch(course: CourseOpt = None, workspace: WorkspaceOpt = None) -> None:
    """Re-grade the current exercise each time you save its file; keys for next, hint, list, reset, quit."""
    from course import watch as watching  # imported here: only this command needs file events

    watching.run(session.open_session(course, workspace))


def main() -> None:
    """Run the typer application (the console script enters through `course.entry.main`)."""
    app()
