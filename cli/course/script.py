"""`course run SCRIPT [ARGS...]`: the learner's own script, run as Python runs it, with kernels interpreted where
JAX has no TPU.

The script runs in this process as `__main__` (`runpy`), with `sys.argv` and the first entry of `sys.path` as
`python SCRIPT ARGS...` would set them, after `course.interpreter` has made every Pallas kernel run in the strict
TPU interpreter should JAX find no TPU. The result says how it ended: an exit code, the text `sys.exit` was
given, or the exception nothing caught (its traceback starting at the script's own frames, as Python shows it).
"""

from __future__ import annotations

import runpy
import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from course.errors import UsageError

__all__ = ["ScriptEnd", "run"]


@dataclass(frozen=True)
class ScriptEnd:
    """How a script ended: the exit code, and what Python would print for it (nothing for a clean end)."""

    code: int
    error: BaseException | None = None
    """The exception nothing caught, its traceback starting at the script's frames."""
    message: str = ""
    """The text a `sys.exit("...")` gave, which Python prints."""


def run(script: Path, args: list[str], announce: Callable[[], None] | None = None) -> ScriptEnd:
    """Run `script` with `args` as `__main__`, kernels strictly interpreted where JAX has no TPU (`announce` is
    called once, at the first kernel so run)."""
    path = _checked(script)
    from course import interpreter

    command = sys.modules.get("course.entry")  # the `course` command, when it is the one running this
    if command is not None:
        command.RUNNING = False  # this process now runs the learner's code: its children are no grading's
    interpreter.interpret_where_no_tpu(announce)
    with _as_python_runs(path, args):
        try:
            runpy.run_path(str(path), run_name="__main__")
        except SystemExit as exc:
            return _exited(exc.code)
        except KeyboardInterrupt:
            return ScriptEnd(130)
        except BaseException as exc:  # noqa: BLE001 - the script's own failure, told as Python tells it
            return ScriptEnd(1, exc.with_traceback(_from_script(exc.__traceback__, path)))
    return ScriptEnd(0)


def _checked(script: Path) -> Path:
    """The script's path, or a UsageError that says what is wrong with it."""
    if not script.exists():
        raise UsageError(f"there is no file {script}; give `course run` the path of your Python script.")
    if script.is_dir() and not (script / "__main__.py").is_file():
        raise UsageError(f"{script} is a folder without a __main__.py; give `course run` a Python script.")
    return script.resolve()


@contextmanager
def _as_python_runs(path: Path, args: list[str]) -> Iterator[None]:
    """`sys.argv` and `sys.path[0]` as `python SCRIPT ARGS...` sets them, put back afterwards."""
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [str(path), *args]
    sys.path.insert(0, str(path if path.is_dir() else path.parent))
    try:
        yield
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path


def _exited(code: object) -> ScriptEnd:
    """What `sys.exit(code)` means: None is 0, an int is itself, anything else is printed and is 1."""
    if code is None:
        return ScriptEnd(0)
    if isinstance(code, int):
        return ScriptEnd(code)
    return ScriptEnd(1, message=str(code))


def _from_script(tb: types.TracebackType | None, path: Path) -> types.TracebackType | None:
    """`tb` from the script's own first frame on (the whole of it if there is none), without the frames of
    `course` and `runpy` that started it."""
    main = str(path / "__main__.py" if path.is_dir() else path)
    at = tb
    while at is not None and at.tb_frame.f_code.co_filename != main:
        at = at.tb_next
    return at if at is not None else tb
