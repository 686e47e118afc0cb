"""The `course` command line: each command parses, calls the session or an instructor module, renders, exits.

Failures are turned into one sentence and an exit code in one place, `course.options.Group.invoke`,
which hands them to `course.errors.exit_code_for` (the console script's fast path uses it too).
Every command that takes an exercise accepts it as people type it (`course.names`). The
instructor's commands live in `course.instructor.commands` and are added last; `--help` lists
the learner's and the teacher's in two panels (`course.options.LEARNING`).
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
from course.options import CourseOpt, Group, OptionalNameArg, WorkspaceOpt
from course.session import Session, exit_code, init_workspace
from course.ui import verdicts, views

app = typer.Typer(
    cls=Group,
    help="Graded exercises for JAX Performance & Distributed.\n\n"
    "Edit the file of the current exercise, run `course check`, read what each check says, "
    "repeat. `course list` shows where you are; `course watch` re-checks on every save. "
    "An exercise can be named by its name, its number (1, 01), its folder or file, or with dashes.",
    add_completion=False,
    invoke_without_command=True,
    rich_markup_mode=None,
    suggest_commands=False,  # Group.resolve_command says it once, in one sentence
    context_settings={"help_option_names": ["-h", "--help"]},
)


def given(course: Path | None, workspace: Path | None) -> tuple[Path | None, Path | None]:
    """--course and --workspace as given to the command, or else before it (`course --workspace W check`)."""
    import click

    ctx = click.get_current_context(silent=True)
    root = (ctx.find_root().obj if ctx is not None else None) or {}
    return course or root.get("course"), workspace or root.get("workspace")


def open_session(course: Path | None, workspace: Path | None, *, warn: bool = True) -> Session:
    """The session of this command, with a warning for anything recovered from its files (given later
    with `warn_of` when `warn` is false: after a long table, where it is still on screen)."""
    session = Session.open(*given(course, workspace))
    if warn:
        warn_of(session)
    return session


def warn_of(session: Session, *, again: bool = False) -> None:
    """Warn of what was recovered from the workspace's files (`again`: a second time, under long output)."""
    for message in session.warnings:
        ui.warning(f"{message} (said again: the output above was long)" if again else message)


def say_where_grading_runs(session: Session) -> None:
    """Before grading: if JAX was asked for an accelerator, say (once) that grading uses the CPU; where nothing
    confines the learner's code beyond their own rights (root, or no namespace), say that too, in one line."""
    from course import accelerator
    from course.engine.contain import protections

    notice = accelerator.notice(session.paths)
    if notice:
        ui.info(notice)
    rights = protections.own_rights()
    if rights:
        ui.warning(rights)


@app.callback()
def root(ctx: typer.Context, course: CourseOpt = None, workspace: WorkspaceOpt = None) -> None:
    """Without a command: the list of exercises and what to do next."""
    ctx.obj = {"course": course, "workspace": workspace}
    if ctx.invoked_subcommand is None:
        session = open_session(course, workspace, warn=False)
        views.course_list(session, with_next=True)
        warn_of(session)


@app.command("list")
def list_(course: CourseOpt = None, workspace: WorkspaceOpt = None) -> None:
    """Every exercise by part, with its topic, status and points."""
    session = open_session(course, workspace, warn=False)
    views.course_list(session, with_next=False)
    warn_of(session)


@app.command()
def check(
    names: Annotated[
        list[str] | None,
        typer.Argument(help="Exercises to grade, as names, numbers, folders or files (default: the current one).",
                       show_default=False),
    ] = None,
    all_: Annotated[bool, typer.Option("--all", help="Grade every exercise.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout and nothing else.")] = False,
    jobs: Annotated[
        int, typer.Option("--jobs", "-j", help="Exercises graded at once (default: number of cores).", min=0)
    ] = 0,
    seed: Annotated[int | None, typer.Option("--seed", help="Repeat the random inputs of an earlier run.")] = None,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="With several exercises, show every check, not the first failure.")
    ] = False,
    show_output: Annotated[
        bool, typer.Option("--show-output", help="Show what your code printed under passing checks too.")
    ] = False,
    chip: Annotated[
        bool, typer.Option("--chip/--no-chip", help="On a machine with a TPU, also compile your kernels on the chip "
                                                    "and compare their results (the grade stays the CPU's).")
    ] = True,
    course: CourseOpt = None,
    workspace: WorkspaceOpt = None,
) -> None:
    """Grade exercises and say, check by check, what holds.

    Without a name, the current exercise. On a machine with a TPU, the kernels are then compiled
    on the chip and compared with the CPU's result (`--no-chip` skips it); the verdict stays the
    CPU's, so every learner gets the same grade. Exit code 0 when every selected exercise passes,
    1 when a check fails, 2 for a usage problem, 3 when the course itself failed.
    """
    from course.engine.contain import protections

    protections.probe_soon()  # what this machine confines gradings with, found while the course is read
    session = open_session(course, workspace)
    selected = session.select(names or [], all_=all_)
    for token, exercise in session.other_files(names or []):
        ui.warning(f"{token} is not the file `course check` grades: it grades your file of {exercise.name}, "
                   f"{ui.shown_path(session.submission(exercise))}.")
    say_where_grading_runs(session)
    jobs = jobs or os.cpu_count() or 1
    live = verdicts.LiveCheck(selected, len(session.course.exercises), jobs)
    try:
        with ui.live(live, enabled=not as_json):
            graded = session.check(selected, jobs=jobs, seed=seed, on_result=live.result, on_event=live.event)
    except KeyboardInterrupt as stopped:  # Ctrl-C: what had finished is recorded; show it, and say so
        finished = live.finished()
        if finished and not as_json:
            verdicts.results(session, finished, verbose=verbose, show_output=show_output)
        stopped.add_note(verdicts.kept(finished, len(selected), shown=not as_json))
        raise
    on_chip: dict = {}

    def chip_words() -> None:
        on_chip.update(_on_chip(session, graded, quiet=as_json) if chip else {})

    if as_json:
        chip_words()
        ui.emit_json(views.check_json(session, graded, on_chip))
    else:
        verdicts.results(session, graded, verbose=verbose, show_output=show_output, then=chip_words)
        if len(graded) > 1:
            warn_of(session, again=True)
    raise typer.Exit(exit_code(graded))


def _on_chip(session: Session, graded: list, *, quiet: bool) -> dict:
    """On a machine with a TPU: each graded kernel compiled and compared on the chip, shown after the verdicts."""
    from course.chip import presence

    if not presence.tpu_here():
        return {}
    from course.chip import runs
    from course.ui import chip as drawing

    def started(name: str, i: int, n: int) -> None:
        if not quiet and ui.err.is_terminal:
            ui.info(f"on the TPU: {name}" + (f" ({i + 1} of {n})" if n > 1 else "") + "...")

    reports = runs.after_check(session, graded, on_start=started)
    if not quiet:
        for report in reports.values():
            drawing.check_section(report)
            ui.line()
    return {name: report.to_json() for name, report in reports.items()}


@app.command()
def show(
    name: OptionalNameArg = None,
    task: Annotated[bool, typer.Option("--task", help="Print only the task and the file to edit.")] = False,
    no_pager: Annotated[bool, typer.Option("--no-pager", help="Print straight to the terminal, never paged.")] = False,
    course: CourseOpt = None,
    workspace: WorkspaceOpt = None,
) -> None:
    """The lesson and the task, and the file to edit."""
    from course.ui import lessons  # imported here: only `show` renders Markdown

    session = open_session(course, workspace)
    exercise = session.named_or_current(name)
    text = exercise.lesson_path.read_text(encoding="utf-8")
    if task:
        text = lessons.task(text) or text
    with ui.paged(enabled=not no_pager and not task):
        lessons.render(text)
        ui.line(f"Edit: {ui.shown_path(session.submission(exercise))}", style="bold")


@app.command()
def hint(
    name: OptionalNameArg = None,
    level: Annotated[
        int | None,
        typer.Option("--level", "-l", help="Show this level (1 is a nudge, the last nearly the answer).", min=1),
    ] = None,
    course: CourseOpt = None,
    workspace: WorkspaceOpt = None,
) -> None:
    """The next hint, from a nudge to nearly the answer."""
    session = open_session(course, workspace)
    views.hint(session.next_hint(session.named_or_current(name), level))


@app.command()
def reset(
    name: OptionalNameArg = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    course: CourseOpt = None,
    workspace: WorkspaceOpt = None,
) -> None:
    """Put the stub back; your version is kept as a backup.

    `course restore` brings your version back.
    """
    session = open_session(course, workspace)
    exercise = session.named_or_current(name)
    if session.is_stub_now(exercise):
        session.reset(exercise)
        ui.line(f"{ui.shown_path(session.submission(exercise))} is still the stub of {exercise.name}: "
                "nothing to restore, and nothing of yours to keep.")
        return
    if not yes:
        if not sys.stdin.isatty():
            raise UsageError(f"`course reset {exercise.name}` replaces your file; add --yes to confirm.")
        typer.confirm(f"Restore the stub of {exercise.name}? Your version is kept as a backup.", abort=True)
    backup = session.reset(exercise)
    ui.line(f"Restored the stub of {exercise.name}: {ui.shown_path(session.submission(exercise))}.")
    if backup is not None:
        ui.line(f"Your version is kept at {ui.shown_path(backup)}; `course restore {exercise.name}` brings it back.")


@app.command()
def restore(name: OptionalNameArg = None, course: CourseOpt = None, workspace: WorkspaceOpt = None) -> None:
    """Bring back your version from before the last reset.

    The file it replaces is kept as a backup too, so a second restore undoes the first.
    """
    session = open_session(course, workspace)
    exercise = session.named_or_current(name)
    restored, kept = session.restore(exercise)
    ui.line(f"Restored {ui.shown_path(session.submission(exercise))} from {ui.shown_path(restored)}.")
    if kept is not None:
        ui.line(f"The file it replaced is kept at {ui.shown_path(kept)}.")
    ui.line(f"Next: `course check {exercise.name}` grades it.")


@app.command()
def solution(name: OptionalNameArg = None, course: CourseOpt = None, workspace: WorkspaceOpt = None) -> None:
    """The reference solution, once you have passed.

    Without a name: the exercise you passed last.
    """
    session = open_session(course, workspace)
    exercise = session.exercise(name) if name else (session.last_passed() or session.named_or_current(None))
    if not exercise.solution_path.is_file():
        raise UsageError("solutions are not part of this copy of the course; your instructor keeps them.")
    if not session.passed_ever(exercise):
        ui.error(f"`{exercise.name}` has not passed yet; its solution opens once `course check {exercise.name}` "
                 "passes.")
        raise typer.Exit(1)
    ui.raw(exercise.solution_path.read_text(encoding="utf-8"))


@app.command("progress")
def progress_(
    as_json: Annotated[bool, typer.Option("--json", help="Print the stored progress as JSON.")] = False,
    course: CourseOpt = None,
    workspace: WorkspaceOpt = None,
) -> None:
    """What has passed, your points, and when each was checked."""
    session = open_session(course, workspace, warn=False)
    if as_json:
        ui.emit_json(views.progress_json(session.summary()))
    else:
        views.progress(session.summary())
    warn_of(session)


@app.command()
def init(
    directory: Annotated[Path, typer.Argument(help="Folder to make into a workspace.")],
    course: CourseOpt = None,
) -> None:
    """A fresh workspace holding the stubs and nothing else."""
    made = init_workspace(given(course, None)[0], directory)
    ui.line(f"Workspace ready at {ui.shown_path(directory.resolve())} ({len(made)} files).")
    ui.line(f"Next: cd {directory} && course check")


@app.command("inspect")
def inspect_(
    name: Annotated[str | None, typer.Argument(help="The exercise (default: the current one).", show_default=False)]
    = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout and nothing else.")] = False,
    course: CourseOpt = None,
    workspace: WorkspaceOpt = None,
) -> None:
    """What your code compiles, donates and runs, as the graders see it."""
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
        with ui.paged():  # on a terminal, an inspection taller than the screen opens at its title
            drawing.inspection(found, str(session.submission(exercise)))
    raise typer.Exit(found.exit_code)


@app.command(context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True})
def run(
    script: Annotated[Path, typer.Argument(help="Your Python script, run as `python SCRIPT ARGS...` runs it.",
                                           show_default=False)],
    args: Annotated[list[str] | None, typer.Argument(help="Arguments for the script (its `sys.argv[1:]`).",
                                                     show_default=False)] = None,
) -> None:
    """Run your script, its kernels interpreted where there is no TPU.

    `course run my_kernels.py ARGS...` runs the script as `python my_kernels.py ARGS...` does, with one
    difference: on a machine without a TPU, every `pl.pallas_call` runs in the strict TPU interpreter, as
    `course check` runs it, whatever `interpret=` it was given. On a TPU nothing changes and your kernels
    compile. So leave `interpret=` out of your file: the same file runs here and on a TPU. In a notebook,
    `%load_ext course` does the same for the notebook's own kernels. The exit code is the script's.
    """
    from course import script as scripts  # imported here: only this command runs a learner's script

    said = "No TPU: Pallas kernels run in the strict TPU interpreter, as `course check` runs them."
    end = scripts.run(script, args or [], announce=lambda: ui.info(said))
    if end.error is not None:
        ui.flush()
        sys.excepthook(type(end.error), end.error, end.error.__traceback__)
    elif end.message:  # `sys.exit("...")`: printed as Python prints it
        ui.flush()
        sys.stderr.write(end.message + "\n")
    raise typer.Exit(end.code)


@app.command()
def bench(
    name: Annotated[str | None, typer.Argument(help="The exercise (default: every kernel you have written).",
                                               show_default=False)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout and nothing else.")] = False,
    tpu: Annotated[str, typer.Option("--tpu", help="Without a chip: the TPU generation to estimate for "
                                                  "(v4, v5e, v5p, v6e).")] = "v5e",
    course: CourseOpt = None,
    workspace: WorkspaceOpt = None,
) -> None:
    """How fast your kernels run on a TPU, against XLA's own op and the chip's peak.

    On a machine with a TPU, each kernel is timed at the lesson's sizes on the chip's own clock
    (warm-up, fresh inputs every call, median of an adaptive number of calls), its values checked
    again after timing, and set against XLA's op for the same math and the chip's roofline; your
    best time is kept. Without a TPU, it estimates the time on the generation `--tpu` names from
    your kernel's grid, blocks and index maps, and says it is an estimate.
    """
    from course.chip import roofline, runs
    from course.ui import chip as drawing

    if tpu not in roofline.GENERATIONS:
        raise UsageError(f"--tpu {tpu} is no TPU generation `course bench` knows; one of "
                         f"{', '.join(roofline.GENERATIONS)}.")
    session = open_session(course, workspace)
    targets = runs.bench_targets(session, name)
    if not targets:
        raise UsageError("none of your kernels to time yet: `course bench` times tiled_matmul, flash_attention and "
                         "double_buffer once you have written them.")
    done = []
    for exercise in targets:
        if not as_json and ui.err.is_terminal:
            ui.info(f"timing {exercise.name}...")
        report, improved = runs.bench(session, exercise, tpu=tpu)
        done.append(report)
        if not as_json:
            drawing.bench_report(report, improved)
            ui.line()
    if as_json:
        ui.emit_json({"course": session.course.meta.title, "exercises": [r.to_json() for r in done]})
    raise typer.Exit(0 if all(r.ok for r in done) else 1)


@app.command()
def watch(name: OptionalNameArg = None, course: CourseOpt = None, workspace: WorkspaceOpt = None) -> None:
    """Re-grade on every save; keys for next, hint, list, reset, quit.

    Keys and saves work while a check runs: a new save grades the new file at once, q quits.
    """
    from course import watch_loop  # imported here: only this command needs file events

    watch_loop.require_terminal()
    session = open_session(course, workspace)
    exercise = session.exercise(name) if name else None
    say_where_grading_runs(session)
    watch_loop.run(session, exercise)
    # Everything is written and every process of ours has ended; tearing down the hundreds of
    # modules loaded would add a sixth of a second to a `q` that must take well under 0.3 s.
    ui.flush()
    os._exit(0)


register_instructor_commands(app)
