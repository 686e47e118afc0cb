"""The grading process's standard streams and stack file, handled by the plugin before and between checks.

Python's standard output and error write each line at once, and the descriptors under them are
duplicated before learner code runs, so they can be put back if that code closes them. The stack
file is opened before the checks run (its folder is closed to everyone once they do) and handed to
`faulthandler`, which writes every thread's stack into it when the parent asks, shortly before it
stops a run at a limit. In a split grading's executor, `printed` takes what the learner's code prints
while it answers one of the judge's requests, to be shown under the judge's check.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from course.engine.contain.limits import MAIN_THREAD, STACK_SIGNAL


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


MAX_PRINTED = 64 * 1024
"""What a split grading keeps of the output of one request the executor answers."""


@contextlib.contextmanager
def printed() -> Iterator[list[str]]:
    """Standard output and error, at the descriptors (C code's too), sent to a file while the block runs;
    the list it gives holds their text afterwards (the last MAX_PRINTED bytes)."""
    kept: list[str] = []
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    try:
        saved, sink = (os.dup(1), os.dup(2)), tempfile.TemporaryFile()  # noqa: SIM115 - closed below
    except OSError:
        yield kept
        return
    try:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        yield kept
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        for fd, copy in zip((1, 2), saved, strict=True):
            with contextlib.suppress(OSError):
                os.dup2(copy, fd)
                os.close(copy)
        with contextlib.suppress(OSError):
            size = sink.seek(0, os.SEEK_END)
            sink.seek(max(0, size - MAX_PRINTED))
            text = sink.read().decode("utf-8", errors="replace")
            if text:
                kept.append(text)
        sink.close()
