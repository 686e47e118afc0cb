"""Inside a grading that runs in several processes: join the others, and tell the parent which step this one is in.

The parent (`course.engine.parent.cohort`) starts every process with `--course-process I/N@HOST:PORT`.
Before the learner's file is imported, each calls `jax.distributed.initialize` with that place
(process I of N, the coordinator at HOST:PORT, which process 0 serves). As it goes, each process
writes `{"step": ...}` lines on the events pipe: the plugin at the start of every check, a grader
with `course.grading.observe.calls.processes.step` for the parts of one. The parent reads them to see where
every process is, so it can tell a hang (processes in different steps, none moving) from slow
work, and say where each was. They are for display and diagnosis only: the verdict is the
signed reports'. Once its report is written a process waits to be ended, so the coordinator
and the collectives the others may still be in stay up.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass

OPTION = "--course-process"
INIT_TIMEOUT_S = 60
"""How long `jax.distributed.initialize` waits for every process to connect."""
LINGER_S = 120.0
"""How long a process that has reported waits to be ended before it ends itself."""
STEP_LIMIT = 200
FINISHED_STEP = "finished"


@dataclass(frozen=True)
class Place:
    """Which of several processes this one is, and where their coordinator listens."""

    index: int
    count: int
    address: str

    def to_text(self) -> str:
        """`I/N@HOST:PORT`, the value of OPTION."""
        return f"{self.index}/{self.count}@{self.address}"

    @classmethod
    def parse(cls, text: str) -> Place:
        """The place from `to_text`'s form; ValueError when it is not one."""
        rank, address = text.split("@", 1)
        index, count = (int(v) for v in rank.split("/", 1))
        if not 0 <= index < count or not address:
            raise ValueError(f"not a process place: {text!r}")
        return cls(index, count, address)


_events_fd: int | None = None
_place: Place | None = None


def join(place: Place, events_fd: int | None) -> None:
    """Join the other processes (`jax.distributed.initialize`), saying so on `events_fd` before and after."""
    global _events_fd, _place
    _events_fd, _place = events_fd, place
    announce("connecting to the other processes")
    import jax

    jax.distributed.initialize(coordinator_address=place.address, num_processes=place.count,
                               process_id=place.index, initialization_timeout=INIT_TIMEOUT_S)
    announce("connected")


def active() -> bool:
    """True in a process that is one of several."""
    return _place is not None


def announce(step: str, *, finished: bool = False) -> None:
    """Tell the parent this process is now in `step` (or, `finished`, has written its report)."""
    if _events_fd is None:
        return
    line = {"step": str(step)[:STEP_LIMIT], **({"finished": True} if finished else {})}
    with contextlib.suppress(OSError):
        os.write(_events_fd, (json.dumps(line) + "\n").encode())


def linger() -> None:
    """Wait to be ended by the parent, which does so once every process has reported (or stopped)."""
    if _place is None:
        return
    announce(FINISHED_STEP, finished=True)
    deadline = time.monotonic() + LINGER_S
    while time.monotonic() < deadline:
        time.sleep(0.5)
