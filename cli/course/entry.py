"""The console script's entry point, and the one place where failures become exit codes.

`course` and `course list` run many times a day and their cost is start-up, so when they are
given no options they run without building the typer application; everything else goes
through `course.cli`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

from course.errors import CourseError

_FAST = ([], ["list"])


def failure_code(exc: BaseException) -> int | None:
    """Report `exc` in one sentence and return its exit code; None to let it through."""
    from course import ui

    debug = os.environ.get("COURSE_DEBUG") == "1"
    if isinstance(exc, CourseError):
        if debug:
            return None
        ui.error(str(exc))
        return exc.exit_code
    if isinstance(exc, KeyboardInterrupt):
        ui.error("interrupted.")
        return 130
    if isinstance(exc, Exception) and not debug:
        ui.error(f"course itself failed ({type(exc).__name__}: {exc}); rerun with COURSE_DEBUG=1 for the traceback.")
        return 3
    return None


def run_guarded(func: Callable[[], Any]) -> int:
    """Call `func`; a failure becomes its one-sentence report and exit code."""
    try:
        func()
    except (CourseError, KeyboardInterrupt, Exception) as exc:
        code = failure_code(exc)
        if code is None:
            raise
        return code
    return 0


def _fast_list(with_next: bool) -> None:
    """`course` / `course list` with defaults, exactly as the typer commands do them."""
    from course import session

    session.render_list(session.open_session(None, None), with_next=with_next)


def main() -> None:
    """Run `course`."""
    args = sys.argv[1:]
    if args in _FAST:
        sys.exit(run_guarded(lambda: _fast_list(with_next=not args)))
    from course.cli import app

    app()
