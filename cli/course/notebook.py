"""`course` from Python and Jupyter: `course.check(NAME)`, `course.inspect(NAME)` and the IPython extension.

    import course
    course.check("update_with_donate")      # grades it, records the result, renders in a notebook
    course.inspect("update_with_donate")    # what the code does, as `course inspect` shows it
    course.bench("tiled_matmul")            # timed on the notebook's TPU, or estimated without one

    %load_ext course
    %course check update_with_donate        # any command: %course hint NAME, %course list, ...
    %%course update_with_donate             # the cell becomes the learner's file, then it is graded

The reports render as the terminal shows them: as HTML in Jupyter (`_repr_html_`, whose lines wrap to
the cell), as Markdown where HTML is not wanted (`_repr_markdown_`), and as plain text (`repr`, at the
width of the terminal it is shown in). In a script, where nobody shows the value of `course.check(...)`,
the verdict is printed as it returns. The course and the
workspace are found as on the command line: from the current folder upward, or `COURSE_ROOT` and
`COURSE_WORKSPACE`. Nothing here imports JAX or IPython until a command needs it; `%load_ext course` also
makes the notebook's own Pallas kernels run in the strict TPU interpreter where JAX finds no TPU, as
`course run` does for a script (`course.interpreter`).
"""

from __future__ import annotations

import io
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from course.chip.stage import ChipReport
    from course.engine.parent.inspection import Inspection
    from course.engine.parent.verdict import ExerciseResult
    from course.registry import Exercise
    from course.session import Session

__all__ = ["BenchReport", "CheckReport", "InspectReport", "bench", "check", "inspect", "load_ipython_extension",
           "save_cell", "unload_ipython_extension"]

HTML_WIDTH = 160
"""Columns a report is laid out in for Jupyter's HTML, which then wraps each line to the cell's width:
only a paragraph longer than this is broken by the layout rather than by the browser."""
INTERPRETED = ("No TPU here: this notebook's Pallas kernels run in the strict TPU interpreter, as `course check` "
               "runs them; on a TPU they compile.")
NO_WATCH = ("`course watch` needs a terminal; in a notebook, grade with `%course check NAME`, or put your "
            "file in a cell that starts with `%%course NAME`, which saves it and grades it.")


class _Report:
    """A result that renders itself the way the terminal shows it."""

    def _draw(self) -> None:
        """Print the report through `course.ui` (overridden)."""
        raise NotImplementedError

    def _recorded(self, width: int) -> Any:
        """A private console holding this report laid out in `width` columns, drawn by the terminal's own views."""
        from rich.console import Console

        from course import ui

        console = Console(record=True, file=io.StringIO(), width=width, color_system="truecolor",
                          force_terminal=True, force_jupyter=False, highlight=False, emoji=False)
        saved = ui.out
        ui.out = console  # the views print through `ui.out`; borrow it for the span of one drawing
        try:
            self._draw()
        finally:
            ui.out = saved
        return console

    def __repr__(self) -> str:
        """The report as plain text, as a terminal shows it without colour, at the width of the terminal it
        is shown in (a terminal IPython's; 80 columns when there is none)."""
        import shutil

        return self._recorded(shutil.get_terminal_size((80, 24)).columns).export_text(styles=False).rstrip() + "\n"

    def _repr_html_(self) -> str:
        """The report as HTML, for Jupyter: its lines wrap at words to the width of the cell."""
        return self._recorded(HTML_WIDTH).export_html(inline_styles=True, code_format=_HTML)

    def _repr_markdown_(self) -> str:
        """The report as Markdown: its title, then its text as a block."""
        return f"**{self._title()}**\n\n```text\n{self!r}```\n"

    def _title(self) -> str:
        """One line saying what the report is about."""
        raise NotImplementedError


_HTML = ('<pre style="font-family:Menlo,\'DejaVu Sans Mono\',monospace;font-size:90%;line-height:1.25;'
         'white-space:pre-wrap;overflow-wrap:break-word">{code}</pre>')


class CheckReport(_Report):
    """What `course.check` graded: one `ExerciseResult` per exercise, in `results`."""

    def __init__(self, session: Session, results: list[ExerciseResult], *, cell: bool = False,
                 chip: dict[str, ChipReport] | None = None) -> None:
        self.session, self.results = session, results
        self.cell = cell
        """Graded from a `%%course NAME` cell: the next step is to run the cell again, not `course check`."""
        self.chip = chip or {}
        """What the chip said of each exercise's kernels, on a machine with a TPU."""

    @property
    def passed(self) -> bool:
        """True when every exercise graded passed."""
        return all(r.passed for r in self.results)

    @property
    def exit_code(self) -> int:
        """What `course check` would exit with."""
        from course.session import exit_code

        return exit_code(self.results)

    def to_json(self) -> dict[str, Any]:
        """The `course check --json` object."""
        from course.ui import views

        return views.check_json(self.session, self.results, {n: r.to_json() for n, r in self.chip.items()})

    def _draw(self) -> None:
        """The verdicts, as `course check` prints them, and the chip's words after them."""
        from course import ui
        from course.ui import chip, verdicts

        def chip_words() -> None:
            for report in self.chip.values():
                chip.check_section(report)
                ui.line()

        verdicts.results(self.session, self.results, cell=self.cell, then=chip_words)

    def _title(self) -> str:
        """`course check NAME: passed`."""
        names = ", ".join(r.name for r in self.results)
        return f"course check {names}: {'passed' if self.passed else 'not passed'}"


class InspectReport(_Report):
    """What `course.inspect` observed of one exercise's file, in `inspection`."""

    def __init__(self, session: Session, exercise: Exercise, inspection: Inspection) -> None:
        self.session, self.exercise, self.inspection = session, exercise, inspection

    @property
    def sections(self) -> list[dict[str, Any]]:
        """Each section's report, as `course inspect --json` has them."""
        return self.inspection.sections

    def to_json(self) -> dict[str, Any]:
        """The `course inspect --json` object."""
        from course import inspection

        return inspection.as_json(self.session, self.inspection)

    def _draw(self) -> None:
        """The sections, as `course inspect` prints them."""
        from course.ui import inspection

        inspection.inspection(self.inspection, str(self.session.submission(self.exercise)))

    def _title(self) -> str:
        """`course inspect NAME`."""
        return f"course inspect {self.exercise.name}"


class BenchReport(_Report):
    """What `course.bench` measured (or estimated) of each exercise's kernels, in `reports`."""

    def __init__(self, reports: list[tuple[ChipReport, list[str]]]) -> None:
        self.reports = reports

    def to_json(self) -> dict[str, Any]:
        """The `course bench --json` object's exercises."""
        return {"exercises": [r.to_json() for r, _ in self.reports]}

    def _draw(self) -> None:
        """The tables, as `course bench` prints them."""
        from course import ui
        from course.ui import chip

        for report, improved in self.reports:
            chip.bench_report(report, improved)
            ui.line()

    def _repr_html_(self) -> str:
        """The tables, and a chart of each call's time beside XLA's, the estimate and the roofline."""
        from course.ui.chip import chart_png

        picture = chart_png([r for r, _ in self.reports])
        image = f'<img src="data:image/png;base64,{picture}"/>' if picture else ""
        return super()._repr_html_() + image

    def _title(self) -> str:
        """`course bench NAME`."""
        return "course bench " + ", ".join(r.name for r, _ in self.reports)


def _holds_tpu() -> bool:
    """Whether this very process (a notebook's kernel) has JAX's TPU backend open: no other process can."""
    import sys

    if "jax" not in sys.modules:
        return False
    from jax._src import xla_bridge  # private, but the only way to ask without opening a backend

    return "tpu" in getattr(xla_bridge, "_backends", {})


def bench(name: str | None = None, *, tpu: str = "v5e", course: str | Path | None = None,
          workspace: str | Path | None = None) -> BenchReport:
    """Time your kernels on this machine's TPU as `course bench` does (in this process when the notebook
    already holds the chip), or estimate them for the generation `tpu` names where there is none."""
    from course.chip import runs

    session = _session(course, workspace)
    reports = [runs.bench(session, e, tpu=tpu, here=_holds_tpu()) for e in runs.bench_targets(session, name)]
    report = BenchReport(reports)
    if not _shown_by_the_shell():
        report._draw()
    return report


def _session(course: str | Path | None, workspace: str | Path | None) -> Session:
    """The session, found as the command line finds it."""
    from course.session import Session

    return Session.open(Path(course) if course else None, Path(workspace) if workspace else None)


def check(name: str | None = None, *, course: str | Path | None = None, workspace: str | Path | None = None,
          seed: int | None = None) -> CheckReport:
    """Grade an exercise (default: the current one) as `course check` does, and record the result."""
    from course.chip import runs
    from course.errors import CourseError

    try:
        session = _session(course, workspace)
        exercises = session.select([name] if name else [])
    except CourseError as exc:
        raise _plain(exc) from None
    results = session.check(exercises, seed=seed)
    report = CheckReport(session, results, chip=runs.after_check(session, results, here=_holds_tpu()))
    if not _shown_by_the_shell():
        report._draw()  # a script discards the value of `course.check(...)`: show the verdict as it returns
    return report


def _shown_by_the_shell() -> bool:
    """True where the value of an expression is displayed (IPython, Jupyter, Python's own prompt)."""
    import sys

    ipython = sys.modules.get("IPython")
    running = getattr(ipython, "get_ipython", lambda: None)() if ipython is not None else None
    return running is not None or hasattr(sys, "ps1") or bool(sys.flags.interactive)


def inspect(name: str | None = None, *, course: str | Path | None = None,
            workspace: str | Path | None = None) -> InspectReport:
    """What the learner's code for an exercise does (default: the current one), as `course inspect` shows it."""
    from course import inspection
    from course.errors import CourseError

    try:
        session = _session(course, workspace)
        exercise = inspection.choose(session, name)
    except CourseError as exc:
        raise _plain(exc) from None
    return InspectReport(session, exercise, inspection.run(session, exercise))


def _plain(exc: BaseException) -> BaseException:
    """A learner's mistake (a misspelt name, no course here) without the frames of `course` that led to it: at
    a Python prompt the traceback is their call and the sentence (IPython shows the sentence alone); with
    `COURSE_DEBUG=1`, every frame."""
    import os

    return exc if os.environ.get("COURSE_DEBUG") == "1" else exc.with_traceback(None)


def save_cell(session: Session, exercise: Exercise, text: str) -> Path | None:
    """Make `text` the learner's file for `exercise`; a file of theirs that differs is kept first, as
    `course reset` keeps it. Returns the backup, if one was made."""
    from course.files import write_atomic
    from course.stubs import handed_out
    from course.workspace import _keep_backup

    dest = session.submission(exercise)
    data = text if text.endswith("\n") else text + "\n"
    backup = None
    if dest.exists() and (old := dest.read_bytes()) != data.encode() and old != handed_out(exercise):
        backup = _keep_backup(session.paths.backups, exercise.name, dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(dest, data)
    return backup


def _command(args: list[str]) -> int:
    """Run any other `course` command as the command line runs it, its output shown in the cell.

    It runs in a process of its own, so a command's exit and its terminal handling stay out of
    the notebook's kernel.
    """
    import os
    import shutil
    import subprocess
    import sys

    env = {**os.environ, "COLUMNS": str(shutil.get_terminal_size((80, 24)).columns), "COURSE_NO_PROGRESS": "1"}
    done = subprocess.run([sys.executable, "-m", "course", *args], capture_output=True, text=True, env=env,
                          stdin=subprocess.DEVNULL, check=False)
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    return done.returncode


def _line(line: str) -> Any:
    """`%course VERB [NAME] ...`: check and inspect return reports; any other verb runs as on the command line."""
    from course import ui
    from course.errors import exit_code_for

    args = shlex.split(line) or ["list"]
    verb, rest = args[0], args[1:]
    plain = [a for a in rest if not a.startswith("-")]
    try:
        if verb == "check" and rest == plain and len(plain) <= 1:
            return check(plain[0] if plain else None)
        if verb == "inspect" and rest == plain and len(plain) <= 1:
            return inspect(plain[0] if plain else None)
        if verb == "bench" and rest == plain and len(plain) <= 1:
            return bench(plain[0] if plain else None)
    except Exception as exc:  # noqa: BLE001 - the same one sentence as the command line
        if exit_code_for(exc) is None:
            raise
        return None
    if verb == "watch":
        ui.line(NO_WATCH)
        return None
    _command(args)
    return None


def _cell(line: str, cell: str) -> CheckReport | None:
    """`%%course NAME`: save the cell as the learner's file of NAME (keeping the old one), then grade it."""
    from course import ui
    from course.errors import UsageError, exit_code_for

    try:
        names = shlex.split(line)
        if len(names) != 1:
            raise UsageError("start the cell with `%%course NAME`, naming the one exercise the cell is the file of.")
        session = _session(None, None)
        exercise = session.exercise(names[0])
        backup = save_cell(session, exercise, cell)
        ui.line(f"Saved the cell as {session.submission(exercise)}" +
                (f"; your previous version is kept at {backup}." if backup else "."), style="dim")
        report = check(exercise.name)
        if isinstance(report, CheckReport):
            report.cell = True  # its next step is to run the cell again
        return report
    except Exception as exc:  # noqa: BLE001 - the same one sentence as the command line
        if exit_code_for(exc) is None:
            raise
        return None


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext course`: register the `%course` line magic and the `%%course` cell magic, and run the notebook's
    kernels in the strict TPU interpreter where JAX has no TPU (said once, at the first such kernel)."""
    from course import interpreter, ui

    ipython.register_magics(_magics()(ipython))
    interpreter.interpret_where_no_tpu(lambda: ui.info(INTERPRETED))


def unload_ipython_extension(ipython: Any) -> None:
    """`%unload_ext course`: kernels run as their `interpret=` says again (the magics hold no state);
    `%load_ext course` loads it again."""
    from course import interpreter

    interpreter.interpret_as_written()


def _magics() -> type:
    """The IPython magics class (IPython is imported only when the extension is loaded)."""
    from IPython.core.magic import Magics, line_cell_magic, magics_class

    @magics_class
    class CourseMagics(Magics):
        """`%course ...` runs a command; `%%course NAME` grades the cell as the learner's file of NAME."""

        @line_cell_magic
        def course(self, line: str, cell: str | None = None) -> Any:
            """`%course check NAME`, `%course inspect NAME`, `%course hint NAME`...; `%%course NAME` grades a cell."""
            return _line(line) if cell is None else _cell(line, cell)

    return CourseMagics
