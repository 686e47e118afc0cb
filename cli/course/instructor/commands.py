"""The instructor's commands: `new`, `validate`, `release`, `grade`, `gradebook merge` and `autograder`.

Each parses, calls an instructor module, renders and exits, like the learner's commands. The
modules they call are imported inside each command, so a learner's command pays nothing for them.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from course import ui
from course.errors import Stopped, UsageError
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
    record_stubs: Annotated[bool, typer.Option(
        "--record-stubs", help="Record the stub files as the stubs the course hands out (exercises/stubs.lock), "
        "after changing a stub on purpose; an untouched copy of a recorded stub is \"not tried\".")] = False,
    mutants: Annotated[
        bool, typer.Option("--mutants", help="Grade mutants of each reference solution instead, and show those "
                                             "that survive (docs/authoring.md, \"Mutants\").")
    ] = False,
    per_operator: Annotated[
        int, typer.Option("--per-operator", help="With --mutants: mutants kept per operator and exercise, a fixed "
                                                 "sample (0: all).", min=0)
    ] = 6,
    every_check: Annotated[
        bool, typer.Option("--every-check", help="With --mutants: run every check on each mutant, to name every "
                                                 "check that kills it (slower: by default a mutant's grading stops "
                                                 "at the first check it fails).")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="With --mutants: print the report as one JSON object.")
    ] = False,
    course: CourseOpt = None,
) -> None:
    """Prove exercises sound: stubs fail, solutions pass, every wrong variant is caught (or, with --mutants,
    every mutant of the solution is)."""
    from course import stubs, workspace
    from course.instructor import capacity
    from course.instructor import validate as soundness
    from course.ui import instructor

    found = workspace.resolve(course).course
    if record_stubs:
        instructor.stubs_recorded(stubs.record(found, names or []))
    jobs = jobs or capacity.default_jobs()
    if mutants:
        _mutants(found, names or [], jobs, per_operator, as_json, every_check)
    if as_json or every_check:
        flag = "--json" if as_json else "--every-check"
        raise UsageError(f"{flag} goes with --mutants: `course validate --mutants {flag}`.")
    with instructor.validation_watch(soundness.plan(found, names or []), jobs) as watch:
        report = soundness.validate(found, names or [], jobs=jobs, on_result=watch.validated)
    instructor.validation(report)
    raise typer.Exit(report.exit_code)


def _mutants(found: Any, names: list[str], jobs: int, per_operator: int, as_json: bool, every_check: bool) -> None:
    """`course validate --mutants`: grade, render, exit."""
    from course.instructor import mutation
    from course.ui import mutants as shown

    planned = mutation.plan(found, names, per_operator)
    with stopping_signals(threading.Event()), shown.watch(planned, jobs, enabled=not as_json) as watch:
        report = mutation.run(found, planned, jobs=jobs, per_operator=per_operator, on_result=watch.validated,
                              every_check=every_check)
    if as_json:
        ui.emit_json(report.to_json())
    else:
        shown.report(report)
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


@contextmanager
def stopping_signals(stopped: threading.Event) -> Iterator[None]:
    """While the block runs, SIGTERM, SIGINT and SIGHUP end it as Ctrl-C does (gradings stopped, scratch
    folders removed), after setting `stopped`: a grading ended by the stop is then no verdict."""

    def interrupt(signum: int, _frame: object) -> None:
        """Mark the run stopped first, then raise where the main thread is, so every clean-up runs."""
        stopped.set()
        raise Stopped(signum)

    wanted = [signal.SIGTERM, signal.SIGINT, signal.SIGHUP]
    try:
        previous = {s: signal.signal(s, interrupt) for s in wanted}
    except ValueError:  # not the main thread: nothing to install
        yield
        return
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _shard(text: str | None) -> tuple[int, int] | None:
    """`K/N` as (K, N), 1 <= K <= N; a usage error otherwise."""
    if text is None:
        return None
    k, _, n = text.partition("/")
    if not (k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n)):
        raise UsageError(f"--shard {text} is not K/N with 1 <= K <= N; the second of three shards is `--shard 2/3`.")
    return int(k), int(n)


def grade(
    submissions: Annotated[Path, typer.Argument(help="Folder with one entry per student: a folder or a .zip.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for results.json per student and the gradebook.")],
    roster: Annotated[
        Path | None, typer.Option("--roster", help="CSV of the class: maps entries to student ids, lists who sent "
                                                   "nothing.", show_default=False)
    ] = None,
    shard: Annotated[
        str | None, typer.Option("--shard", help="Grade every N-th entry, from the K-th: K/N (then merge the "
                                                 "shards with `course gradebook merge`).", show_default=False)
    ] = None,
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
    trust: Annotated[
        bool, typer.Option("--trust-submissions", envvar="COURSE_TRUST_SUBMISSIONS",
                           help="Grade even where submitted code would run as root (no unprivileged user to grade "
                                "as): only for submissions you trust.")
    ] = False,
    course: CourseOpt = None,
) -> None:
    """Grade a class: results.json per student (Gradescope's format), gradebook.csv, summary.json, report.html.

    Exit code 0 when every entry was graded, whatever the scores; 2 when some entry could not be
    (named in the gradebook and the summary, after everyone else is graded), or when submitted code
    would run as root and --trust-submissions was not given; 3 when the platform failed for some
    student (their results say so).
    """
    from course import workspace
    from course.engine.contain import protections
    from course.instructor import capacity, gradebook
    from course.instructor import grade as grading
    from course.ui import instructor

    if not trust and protections.grades_as_root(protections.available()):
        raise UsageError("submitted code would run as root here (no user `course-grader` or `nobody` can run this "
                         "Python), so any submission could rewrite its own and its classmates' results; run "
                         "`course grade` as an ordinary user, or in a container per submission, or give "
                         "--trust-submissions if you trust every file.")
    found = workspace.resolve(course).course
    names = [n.strip() for item in only or [] for n in item.split(",") if n.strip()]
    plan = grading.prepare(found, submissions, out, only=names, regrade=regrade, seed=seed, roster=roster,
                           shard=_shard(shard))
    with stopping_signals(plan.stopped), instructor.ClassWatch(plan, jobs or capacity.default_jobs(),
                                                             enabled=not as_json) as watch:
        done = grading.run(plan, jobs=jobs, listener=watch)
    summary, written, note = gradebook.write(done)
    if as_json:
        ui.emit_json(summary)
    else:
        instructor.class_report(summary, written, note, done.capacity)
    raise typer.Exit(done.exit_code)


def gradebook_merge(
    folders: Annotated[list[Path], typer.Argument(help="The --out folder of each shard.")],
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Where the merged gradebook goes (default: the folder that "
                                                      "holds the shards).", show_default=False)
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as one JSON object on stdout.")] = False,
    course: CourseOpt = None,
) -> None:
    """Join the outputs of `course grade --shard K/N` runs into one gradebook.csv, summary.json and report.html."""
    import os

    from course import workspace
    from course.instructor import gradebook, merge
    from course.ui import instructor

    found = workspace.resolve(course).course
    target = out or (Path(os.path.commonpath([f.resolve().parent for f in folders])) if folders else Path.cwd())
    run = merge.merge(found, folders, target)
    summary, written, note = gradebook.write(run, target)
    if as_json:
        ui.emit_json(summary)
    else:
        instructor.class_report(summary, written, note)
    raise typer.Exit(run.exit_code)


def autograder_gradescope(
    out: Annotated[Path, typer.Option("--out", "-o", help="The bundle to write.")] = Path("autograder.zip"),
    budget_s: Annotated[
        float, typer.Option("--budget", help="Seconds one submission's whole run may take (keep it under the "
                                             "assignment's timeout on Gradescope).")
    ] = 480,
    course: CourseOpt = None,
) -> None:
    """Write Gradescope's autograder.zip: setup.sh, run_autograder and the course with its hidden checks."""
    from course import workspace
    from course.instructor import autograder, budget, results
    from course.ui import instructor

    budget.check(budget_s)
    found = workspace.resolve(course).course
    path = autograder.gradescope(found, out, budget_s)
    instructor.paths_written("Gradescope autograder bundle:", [path.resolve()],
                             "Next: upload it as the assignment's autograder (Docker base image with Ubuntu).")
    points = sum(results.max_points(e) for e in found.exercises)
    instructor.notes(budget.settings(found.root, found.meta.title, budget_s, points))


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


def autograder_prairielearn(
    out: Annotated[Path, typer.Option("--out", "-o", help="A PrairieLearn course (or a folder to copy into one).")],
    image: Annotated[
        str, typer.Option("--image", help="The grading image PrairieLearn pulls (build it from the Dockerfile "
                                          "written beside run.sh).")
    ] = "course-grader:latest",
    course: CourseOpt = None,
) -> None:
    """Write a PrairieLearn question per exercise and the external grader they run (run.sh, its Dockerfile)."""
    from course import workspace
    from course.instructor import prairielearn
    from course.ui import instructor

    found = workspace.resolve(course).course
    prairielearn.write(found, out, image)
    grader = out / "serverFilesCourse" / prairielearn.GRADER
    instructor.paths_written(f"PrairieLearn questions for {len(found.exercises)} exercises:",
                             [(out / "questions").resolve(), grader.resolve()],
                             f"Next: `docker build -t {image} {grader}`, push it, and sync the course.")


def register(app: typer.Typer) -> None:
    """Add the instructor's commands to `app`, after the learner's."""
    for command in (new, validate, release, grade):
        app.command()(command)
    autograder_app = typer.Typer(
        cls=Group,
        help="Hand the same grading to Gradescope (a bundle), GitHub Classroom (a workflow) or PrairieLearn.",
        no_args_is_help=True,
        rich_markup_mode=None,
    )
    autograder_app.command("gradescope")(autograder_gradescope)
    autograder_app.command("classroom")(autograder_classroom)
    autograder_app.command("prairielearn")(autograder_prairielearn)
    app.add_typer(autograder_app, name="autograder")
    gradebook_app = typer.Typer(cls=Group, help="Work with graded classes: merge the shards of one.",
                                no_args_is_help=True, rich_markup_mode=None)
    gradebook_app.command("merge")(gradebook_merge)
    app.add_typer(gradebook_app, name="gradebook")
