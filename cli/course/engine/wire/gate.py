"""A grading started ahead of its save: its processes get ready, then wait at the gate until it opens.

`course watch` knows which file it will grade next, but not when: it starts that grading as soon
as a verdict is shown, and opens the gate when the learner saves. Every step that needs no learner
code is then done before the save (forking, pytest's start-up and collection, the signed manifest,
starting JAX's backend), and the save pays only for the checks themselves.

Each grading process reads its go pipe (`{gofd}`) at the end of collection, before it reads the
learner's file: WARM asks it to start JAX's backend while it waits, GO lets it read the file and run
its checks. A grading without a gate finds GO there at once. The parent's clocks for the grading's
wall time, and the duration its result reports, start when the gate opens; its CPU time counts from
the start, as for any grading.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

WARM = b"w"
GO = b"g"
POLL_S = 0.05


class Gate:
    """Opened once, by the caller that decides the grading should run now; a cancelled grading never runs."""

    def __init__(self) -> None:
        self._opened = threading.Event()
        self.opened_at: float | None = None
        """When the gate opened (`time.monotonic()`): where the grading's duration starts, not its idle wait."""

    def open(self) -> None:
        """Let every process waiting at this gate go on."""
        self.opened_at = time.monotonic()
        self._opened.set()

    def wait(self, cancel: threading.Event | None, alive: Callable[[], bool]) -> bool:
        """Block until the gate opens (True), or the grading is cancelled or its process has ended (False)."""
        while not self._opened.wait(POLL_S):
            if (cancel is not None and cancel.is_set()) or not alive():
                return False
        return True


def go_pipe(gate: Gate | None) -> tuple[int, int | None]:
    """The read end for the grading process, and the write end the parent keeps (None: told GO already)."""
    read, write = os.pipe()
    os.write(write, WARM if gate is not None else GO)
    if gate is None:
        os.close(write)
        return read, None
    return read, write


def release(write: int | None, opened: bool) -> None:
    """Tell a waiting process to go on (or, when not opened, to give up), and close the parent's end."""
    if write is None:
        return
    try:
        if opened:
            os.write(write, GO)
    except OSError:  # the process is already gone: its outcome says so
        pass
    finally:
        os.close(write)


def await_go(fd: int | None, warm: Callable[[], None] | None = None) -> bool:
    """In the grading process: wait for GO; on WARM, call `warm` first. False when the parent gave up."""
    if fd is None:
        return True
    while True:
        byte = os.read(fd, 1)
        if byte != WARM:
            os.close(fd)
            return byte == GO
        if warm is not None:
            warm()
