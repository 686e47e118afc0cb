"""The instructor's commands: `new`, `validate`, `release`, `grade` and `autograder`.

Each parses, calls an instructor module, renders and exits, like the learner's commands. The
modules they call are imported inside each command, so a learner's command pays nothing for them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from course import ui
from course.errors import UsageError
from course.options import CourseOpt, Group, JobsOpt

__all__ = ["register"]


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


def validate(
    names: Annotated[
        list[str] | None, typer.Argument(help="Exercises to validate (default: all).", show_default=False)
    ] = None,
    jobs: JobsOpt = 0,
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


def grade(
    submissions: Annotated[Path, typer.Argument(help="Folder with one entry per student: a folder or a .zip.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for results.json per student and the gradebook.")],
    jobs: JobsOpt = 0,
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


def register(app: typer.Typer) -> None:
    """Add the instructor's commands to `app`, after the learner's."""
    for command in (new, validate, release, grade):
        app.command()(command)
    autograder_app = typer.Typer(
        cls=Group,
        help="Hand the same grading to Gradescope (a bundle) or GitHub Classroom (a workflow).",
        no_args_is_help=True,
        rich_markup_mode=None,
    )
    autograder_app.command("gradescope")(autograder_gradescope)
    autograder_app.command("classroom")(autograder_classroom)
    app.add_typer(autograder_app, name="autograder")
