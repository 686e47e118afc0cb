"""The `course` command line: each command parses, calls the session or an instructor module, renders, exits.

Failures are turned into one sentence and an exit code in one place, `Group.invoke`, which
hands them to `course.errors.exit_code_for` (the console script's fast path uses it too).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any

import click
import typer
from typer.core import TyperGroup

from course import ui
from course.errors import UsageError, exit_code_for
from course.session import Session, exit_code, init_workspace
from course.ui import views


class Group(TyperGroup):
    """The command group, with the single error handler at the edge of every command."""

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; a CourseError or a crash becomes one sentence and its exit code."""
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except BaseException as exc:  # noqa: BLE001 - Ctrl-C too gets its sentence and code
            code = exit_code_for(exc)
            if code is None:
                raise
            raise click.exceptions.Exit(code) from None


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
NameArg = Annotated[str, typer.Argument(help="The exercise (`course list` shows the names).")]


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


@app.command()
def new(
    name: Annotated[str, typer.Argument(help="The new exercise's name: a-z, 0-9 and _, at most 40 characters.")],
    topic: Annotated[
        str | None,
        typer.Option("--topic", "-t", help="Short topic shown in `course list`, e.g. donation.", show_default=False),
    ] = None,
    hidden: Annotated[
        bool, typer.Option("--hidden", help="Also scaffold hidden checks (graders/NN_name/hidden/); alone, for an "
                                            "existing exercise, only those.")
    ] = False,
    course: CourseOpt = None,
) -> None:
    """Scaffold an exercise, its grader, solution and wrong/ folder, and add it to course.toml."""
    # Imported here: instructor commands should cost the learner's commands nothing at start-up.
    from course import workspace
    from course.instructor import scaffold

    found = workspace.resolve(course).course
    if hidden and topic is None and name in found.meta.exercises:
        made = [scaffold.new_hidden(found.get(name))]
        ui.line(f"Made hidden checks for `{name}`:", style="bold")
    elif topic is None:
        raise UsageError(f"give the new exercise a topic: `course new {name} --topic donation`.")
    else:
        made = scaffold.new_exercise(found, name, topic, hidden=hidden)
        ui.line(f"Made `{name}` at position {len(found.meta.exercises) + 1}:", style="bold")
    for path in made:
        ui.line(f"  {path.relative_to(found.root)}")
    ui.line(f"Next: fill in every TODO (docs/authoring.md shows how), then `course validate {name}`.")


@app.command()
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
    from course import workspace
    from course.instructor import validate as soundness
    from course.ui import instructor

    found = workspace.resolve(course).course
    with ui.progress_bar(len(soundness.plan(found, names or [])), "validating") as advance:
        report = soundness.validate(found, names or [], jobs=jobs, on_progress=advance)
    instructor.validation(report)
    raise typer.Exit(report.exit_code)


@app.command()
def watch(course: CourseOpt = None, workspace: WorkspaceOpt = None) -> None:
    """Re-grade the current exercise each time you save its file; keys for next, hint, list, reset, quit."""
    from course import watch as watching  # imported here: only this command needs file events

    watching.run(open_session(course, workspace))


@app.command()
def release(
    out: Annotated[Path, typer.Argument(help="A new folder for the students' copy.")],
    git: Annotated[bool, typer.Option("--git/--no-git", help="Make it a git repository with one commit.")] = True,
    course: CourseOpt = None,
) -> None:
    """Write the students' copy of the course: no solutions/, no hidden checks."""
    from course import workspace
    from course.instructor import release as releasing
    from course.ui import instructor

    found = workspace.resolve(course).course
    made = releasing.release(found, out, git=git)
    instructor.paths_written(f"Released {found.meta.title} to {out.resolve()} ({len(made)} files, no solutions, "
                             "no hidden checks).", [], f"Next: hand it out; students run `cd {out} && "
                             "pip install -e . && course check`.")


@app.command()
def grade(
    submissions: Annotated[Path, typer.Argument(help="Folder with one entry per student: a folder or a .zip.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for results.json per student and the gradebook.")],
    jobs: Annotated[
        int, typer.Option("--jobs", "-j", help="Gradings run at once (default: number of cores).", min=0)
    ] = 0,
    regrade: Annotated[bool, typer.Option("--regrade", help="Grade again what an earlier run graded.")] = False,
    only: Annotated[
        list[str] | None, typer.Option("--only", help="Grade only this exercise (repeat, or separate with commas).",
                                       show_default=False)
    ] = None,
    seed: Annotated[
        int | None, typer.Option("--seed", help="The class's inputs (default: kept from the last run).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as one JSON object on stdout.")] = False,
    course: CourseOpt = None,
) -> None:
    """Grade a class: results.json per student (Gradescope's format), gradebook.csv, summary.json, report.html.

    Exit code 0 when every student was graded, whatever their scores; 2 for bad input; 3 when
    the platform failed for some student (their results say so).
    """
    from course import workspace
    from course.instructor import grade as grading
    from course.instructor import gradebook
    from course.ui import instructor

    found = workspace.resolve(course).course
    names = [n.strip() for item in only or [] for n in item.split(",") if n.strip()]
    plan = grading.prepare(found, submissions, out, only=names, regrade=regrade, seed=seed)
    with instructor.grading_progress(len(plan.students), enabled=not as_json) as advance:
        done = grading.run(plan, jobs=jobs, on_student=lambda s: advance(s.entry.student))
    summary, written, note = gradebook.write(done)
    if as_json:
        ui.emit_json(summary)
    else:
        instructor.class_report(summary, written, note)
    raise typer.Exit(done.exit_code)


autograder_app = typer.Typer(
    cls=Group,
    help="Hand the same grading to Gradescope (a bundle) or GitHub Classroom (a workflow).",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(autograder_app, name="autograder")


@autograder_app.command("gradescope")
def autograder_gradescope(
    out: Annotated[Path, typer.Option("--out", "-o", help="The bundle to write.")] = Path("autograder.zip"),
    course: CourseOpt = None,
) -> None:
    """Write Gradescope's autograder.zip: setup.sh, run_autograder and the course with its hidden checks."""
    from course import workspace
    from course.instructor import autograder
    from course.ui import instructor

    found = workspace.resolve(course).course
    path = autograder.gradescope(found, out)
    instructor.paths_written("Gradescope autograder bundle:", [path.resolve()],
                             "Next: upload it as the assignment's autograder (Docker base image with Ubuntu).")


@autograder_app.command("classroom")
def autograder_classroom(
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="The students' repository (default: the course itself).",
                                  show_default=False)
    ] = None,
    course: CourseOpt = None,
) -> None:
    """Write .github/workflows/classroom.yml: one graded step per exercise, `course check NAME`."""
    from course import workspace
    from course.instructor import autograder
    from course.ui import instructor

    found = workspace.resolve(course).course
    path = autograder.classroom(found, out or found.root)
    instructor.paths_written("GitHub Classroom workflow:", [path.resolve()],
                             "Next: commit it to the template repository (a `course release` of this course).")
