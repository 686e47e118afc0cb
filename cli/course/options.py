"""What every command shares: the group that turns failures into one sentence, and common options."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import click
import typer
from typer.core import TyperGroup

from course.errors import UsageError, exit_code_for

__all__ = ["LEARNING", "CourseOpt", "Group", "JobsOpt", "NameArg", "OptionalNameArg", "WorkspaceOpt"]

LEARNING = ("list", "show", "check", "watch", "hint", "inspect", "run", "solution", "reset", "restore", "progress",
            "init")
"""The learner's commands, in the order `course --help` lists them; every other command is the teacher's."""


class Group(TyperGroup):
    """The command group: the single error handler at the edge of every command, a command typo named
    once, and `--help` in two panels (learning, teaching) with each description whole."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """The command `args` starts with; an unknown one is one sentence with its closest match."""
        if args and not args[0].startswith("-") and self.get_command(ctx, args[0]) is None:
            import difflib

            close = difflib.get_close_matches(args[0], self.list_commands(ctx), n=1)
            where = "course" if ctx.parent is None else f"course {ctx.info_name}"
            guess = f"did you mean `{where} {close[0]}`?" if close else f"`{where} --help` lists them."
            raise UsageError(f"there is no command `{args[0]}`; {guess}")
        return super().resolve_command(ctx, args)

    def list_commands(self, ctx: click.Context) -> list[str]:
        """The learner's commands first, in LEARNING's order, then the teacher's as registered."""
        names = list(self.commands)
        return sorted(names, key=lambda n: LEARNING.index(n) if n in LEARNING else len(LEARNING))

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands, each with the whole first line of its help; at the top, in two panels."""
        rows: dict[str, list[tuple[str, str]]] = {"Learning": [], "Teaching": []}
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is None or command.hidden:
                continue
            text = command.short_help or (command.help or "").strip().split("\n")[0]
            panel = "Learning" if name in LEARNING or ctx.parent is not None else "Teaching"
            rows[panel].append((name, text.strip()))
        width = max((len(name) for found in rows.values() for name, _ in found), default=0)
        for title, found in rows.items():
            if found:
                with formatter.section(title if ctx.parent is None else "Commands"):
                    formatter.write_dl([(name.ljust(width), text) for name, text in found])

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
OptionalNameArg = Annotated[
    str | None,
    typer.Argument(
        help="The exercise: its name, number (1, 01), folder, file or dashed name (default: the current one).",
        show_default=False,
    ),
]
JobsOpt = Annotated[int, typer.Option("--jobs", "-j", help="Gradings run at once (default: number of cores).", min=0)]
