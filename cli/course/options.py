"""What every command shares: the group that turns failures into one sentence, and common options."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import click
import typer
from typer.core import TyperGroup

from course.errors import exit_code_for

__all__ = ["CourseOpt", "Group", "JobsOpt", "NameArg", "WorkspaceOpt"]


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
JobsOpt = Annotated[int, typer.Option("--jobs", "-j", help="Gradings run at once (default: number of cores).", min=0)]
