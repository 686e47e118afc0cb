"""The grading process's standard streams and stack file, handled by the plugin before and between checks.

Python's standard output and error write each line at once, and the descriptors under them are
duplicated before learner code runs, so they can be put back if that code closes them. The stack
file is opened before the checks run (its folder is closed to everyone once they do) and handed to
`faulthandler`, which writes every thread's stack into it when the parent asks, shortly before it
stops a run at a limit.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import threading
from pathlib import Path
from typing import Any

from course.engine.limits import MAIN_THREAD, STACK_SIGNAL


def stack_on_request(path: Path) -> int | None:
    """Open the stack file now (once checks run, its folder is closed to everyone) and have
    faulthandler write every thread's stack into it when the parent asks, shortly before it
    stops the run at a limit: from C, so it works inside an endless loop or a blocked call."""
    if not hasattr(faulthandler, "register"):
        return None
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(fd, f"{MAIN_THREAD}0x{threading.main_thread().ident or 0:x}\n".encode())
        faulthandler.register(STACK_SIGNAL, file=fd, all_threads=True, chain=False)
    except (OSError, ValueError, RuntimeError):
        return None
    return fd


def line_buffered(streams: tuple[Any, ...]) -> None:
    """Have Python write each line of output at once, not when a buffer fills: a run killed at a
    limit keeps what its last check printed, in order with the notary's marks."""
    for stream in streams:
        with contextlib.suppress(Exception):
            stream.reconfigure(line_buffering=True)


def save_stdio() -> tuple[int, int] | None:
    """Duplicates of the standard output and error descriptors, taken before learner code runs."""
    try:
        return os.dup(1), os.dup(2)
    except OSError:
        return None


def restore_stdio(saved: tuple[int, int] | None) -> None:
    """Put back standard output or error if learner code closed them, so pytest can go on."""
    if saved is None:
        return
    for fd, copy in zip((1, 2), saved, strict=True):
        try:
            os.fstat(fd)
        except OSError:
            # If the copy is gone too, the checks left unfinished say what happened.
            with contextlib.suppress(OSError):
                os.dup2(copy, fd)
