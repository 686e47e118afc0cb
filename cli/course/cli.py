"""The `course` command line: each command parses, calls the session or an instructor module, renders, exits.

Failures are turned into one sentence and an exit code in one place, `course.options.Group.invoke`,
which hands them to `course.errors.exit_code_for` (the console script's fast path uses it too).
The instructor's commands live in `course.instructor.commands` and are added last.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from course import ui
from course.errors import UsageError
from course.instructor.commands import register as register_instructor_commands
from course.options import CourseOpt, Group, NameArg, WorkspaceOpt
from course.session import Session, exit_code, init_workspace
from course.ui import views

app = typer.Typer(
    cls=Group,
    help="Graded exercises for JAX Performance & Distributed.\n\n"
    "Edit the file of the current exercise, run `course check`, read what each check says, "
    "repeat. `course list` shows where you are; `course watch` re-checks on every save.",
    add_completion=False,
    invoke_without_command=True,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def open_session(course: Path | None, workspace: Path | None) -> Session:
    """The session of this command, with a warning for anything recovered from its files."""
    session = Session.open(course, workspace)
    for message in session.warnings:
        ui.warning(message)
    return session


@app.callback()
def root(ctx: typer.Context, course: CourseOpt = None, workspace: WorkspaceOpt = None) -> None:
    """Without a command: the list of exercises and what to do next."""
    if ctx.invoked_subcommand is None:
        views.course_list(open_session(course, workspace), with_next=True)


@app.command("list")
def list_(course: CourseOpt = None, workspace: WorkspaceOpt = None) -> None:
    """Show every exercise with its topic, status and points."""
    views.course_list(open_session(course, workspace), with_next=False)


@app.command()
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
    """Grade exercises and say, check by check, what holds and what does not.

    Exit code 0 when every selected exercise passes, 1 when a check fails, 2 for a usage
    problem, 3 when the course itself failed.
    """
    session = open_session(course, workspace)
    selected = session.select(names or [], all_=all_)
    with ui.progress_bar(len(selected), "grading", enabled=not as_json) as advance:
        graded = session.check(selected, jobs=jobs or os.cpu_count() or 1, seed=seed,
                               on_result=lambda r: advance(r.name))
    if as_json:
        ui.emit_json(views.check_json(session, graded))
    else:
        views.results(session, graded)
    raise typer.Exit(exit_code(graded))


@app.command()
def show(name: NameArg, course: CourseOpt = None, workspace: WorkspaceOpt = None) -> None:
    """Print the lesson and task, and the path of the file to edit."""
    session = open_session(course, workspace)
    exercise = session.exercise(name)
    ui.lesson(exercise.lesson_path.read_text(encoding="utf-8"))
    ui.line(f"Edit: {session.submission(exercise)}", style="bold")


@app.command()
def hint(
    name: NameArg,
    level: Annotated[
        int | None,
        typer.Option("--level", "-l", help="Show this level (1 is a nudge, the last nearly the answer).", min=1),
    ] = None,
    course: CourseOpt = None,
    workspace: WorkspaceOpt = None,
) -> None:
    """Show hints one level at a time: each call reveals the next."""
    session = open_session(course, workspace)
    views.hint(session.next_hint(session.exercise(name), level))


@app.command()
def reset(
    name: NameArg,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    course: CourseOpt = None,
    workspace: WorkspaceOpt = None,
) -> None:
    """Restore the stub; your version is kept as a backup first, and the command says where."""
    session = open_session(course, workspace)
    exercise = session.exercise(name)
    if not yes:
        if not sys.stdin.isatty():
            raise UsageError(f"`course reset {name}` replaces your file; add --yes to confirm.")
        typer.confirm(f"Restore the stub of {name}? Your version is kept as a backup.", abort=True)
    backup = session.reset(exercise)
    ui.line(f"Restored {session.submission(exercise)}.")
    if backup is not None:
        ui.line(f"Your version is kept at {backup}.")


@app.command()
def solution(name: NameArg, course: CourseOpt = None, workspace: WorkspaceOpt = None) -> None:
    """Show the reference solution, once the exercise has passed."""
    session = open_session(course, workspace)
    exercise = session.exercise(name)
    if not exercise.solution_path.is_file():
        raise UsageError("solutions are not part of this copy of the course; your instructor keeps them.")
    if not session.passed_ever(exercise):
        ui.error(f"`{name}` has not passed yet; the solution opens once `course check {name}` passes.")
        raise typer.Exit(1)
    ui.raw(exercise.solution_path.read_text(encoding="utf-8"))


@app.command("progress")
def progress_(
    as_json: Annotated[bool, typer.Option("--json", help="Print the stored progress as JSON.")] = False,
    course: CourseOpt = None,
    workspace: WorkspaceOpt = None,
) -> None:
    """Summarize what has passed, the points, and the last results (grades nothing)."""
    summary = open_session(course, workspace).summary()
    if as_json:
        ui.emit_json(views.progress_json(summary))
    else:
        views.progress(summary)


@app.command()
def init(
    directory: Annotated[Path, typer.Argument(help="Folder to make into a workspace.")],
    course: CourseOpt = None,
) -> None:
    """Make a fresh workspace holding the stubs and nothing else."""
    made = init_workspace(course, directory)
    ui.line(f"Workspace ready at {directory.resolve()} ({len(made)} files).")
    ui.line(f"Next: cd {directory} && course check")


@app.command("inspect")
def inspect_(
    name: Annotated[str | None, typer.Argument(help="The exercise (default: the current one).", show_default=False)]
    = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout and nothing else.")] = False,
    course: CourseOpt = None,
    workspace: WorkspaceOpt = None,
) -> None:
    """Show what your code does, as the graders see it: compiles, donation, kernels, shardings."""
    from course import inspection  # imported here: only this command needs it
    from course.ui import inspection as drawing

    session = open_session(course, workspace)
    exercise = inspection.choose(session, name)
    if not as_json and ui.err.is_terminal:
        ui.info(f"inspecting {exercise.name}...")
    found = inspection.run(session, exercise)
    if as_json:
        ui.emit_json(inspection.as_json(session, found))
    else:
        drawing.inspection(found, str(session.submission(exercise)))
    raise typer.Exit(found.exit_code)


@app.command()
def watch(course: CourseOpt = None, workspace: WorkspaceOpt = None) -> None:
    """Re-grade the current exercise each time you save its file; keys for next, hint, list, reset, quit."""
    from course import watch as watching  # imported here: only this command needs file events

    watching.run(open_session(course, workspace))


register_instructor_commands(app)
