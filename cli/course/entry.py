"""The console script's entry point.

`course` and `course list` run many times a day and their cost is start-up, so when they are
given no options they run without building the typer application; everything else goes
through `course.cli`. Both paths turn failures into exit codes with `course.errors.exit_code_for`.
"""

from __future__ import annotations

import sys

from course.errors import exit_code_for

_FAST = ([], ["list"])
RUNNING = False
"""True once this process is the `course` command: every child it has is a grading's (`engine.parent.isolation`)."""


def _fast_list(with_next: bool) -> int:
    """`course` / `course list` with defaults, exactly as the typer commands do them."""
    try:
        from course import ui
        from course.session import Session
        from course.ui import views

        ui.use_plain()
        session = Session.open()
        views.course_list(session, with_next=with_next)
        for message in session.warnings:  # under the table, where it stays on screen
            ui.warning(message)
    except BaseException as exc:  # noqa: BLE001 - the edge: every failure becomes a code
        code = exit_code_for(exc)
        if code is None:
            raise
        return code
    return 0


def main() -> None:
    """Run `course`."""
    global RUNNING
    RUNNING = True
    args = sys.argv[1:]
    if args in _FAST:
        sys.exit(_fast_list(with_next=not args))
    if "check" in args:  # a grading needs to know what this machine confines it with: found while the CLI loads
        from course.engine.contain import protections

        protections.probe_soon()
    from course.cli import app

    app()
