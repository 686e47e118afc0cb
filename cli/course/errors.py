"""Typed errors, and the one place (`exit_code_for`) where a failure becomes a sentence and an exit code."""

from __future__ import annotations

from collections.abc import Callable


class CourseError(Exception):
    """A problem the learner or instructor can fix; its message is one sentence saying what to do."""

    exit_code = 2

    @property
    def _render_traceback_(self) -> Callable[[], list[str]]:
        """How IPython and Jupyter show this error when a call of `course` raises it in a cell: its one sentence,
        as the command line says it, without the frames that led there (`COURSE_DEBUG=1` keeps them)."""
        import os

        if os.environ.get("COURSE_DEBUG") == "1":  # no such attribute: IPython then shows its own traceback
            raise AttributeError("_render_traceback_")
        return lambda: [f"error: {self}"]


class UsageError(CourseError):
    """A command was called wrongly: an unknown exercise, a bad option, a missing workspace."""


class UnknownExercise(UsageError):
    """A name that is not in `course.toml`, with the names closest to it."""

    def __init__(self, name: str, closest: list[str] | None = None, count: int = 0) -> None:
        guess = " or ".join(f"`{n}`" for n in closest or [])
        hint = f"did you mean {guess}? (`course list` shows the names)" if guess else "`course list` shows the names."
        if name.strip().isdigit() and count:  # a number out of range: say the range, not a guess
            hint = f"the exercises are numbered 1-{count} (`course list` shows them)."
        super().__init__(f"There is no exercise named `{name}`; {hint}")
        self.name, self.closest = name, list(closest or [])


class RegistryError(CourseError):
    """`course.toml` or an `exercise.toml` is missing or invalid."""


class Stopped(KeyboardInterrupt):
    """The platform stopped the command with a signal (SIGTERM, SIGINT, SIGHUP): it exits 128 + that signal,
    as a shell reports a process the signal ended, so a scheduler tells a stop from a failure."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def exit_code_for(exc: BaseException) -> int | None:
    """The edge of every command: report `exc` in one sentence and return its exit code.

    None means: let it through (a traceback, with `COURSE_DEBUG=1`, or an exit already decided).
    """
    import os

    from course import ui

    debug = os.environ.get("COURSE_DEBUG") == "1"
    if isinstance(exc, CourseError):
        if debug:
            return None
        ui.error(str(exc))
        return exc.exit_code
    if isinstance(exc, KeyboardInterrupt):
        kept = " ".join(getattr(exc, "__notes__", []))  # what the command kept, added where it was stopped
        ui.error(f"interrupted: {kept}" if kept else "interrupted.")
        return 128 + (exc.signum if isinstance(exc, Stopped) else 2)  # 2 is SIGINT: Ctrl-C
    if isinstance(exc, Exception) and not debug:
        ui.error(f"course itself failed ({type(exc).__name__}: {exc}); rerun with COURSE_DEBUG=1 for the traceback.")
        return 3
    return None
