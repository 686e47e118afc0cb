"""A semaphore wait that nothing will ever signal, named at once instead of at the wall-clock cap.

The TPU interpreter runs a kernel's `.wait()` as a loop: while the semaphore's count is short
of what the wait needs, it runs a pending DMA that signals it, if there is one, and otherwise
sleeps a tenth of a second and looks again. On one core nothing else runs, so a wait that finds
its count short and no copy pending can never return: the interpreter sleeps until the grading's
wall cap ends it, minutes later, and burns no CPU meanwhile. `watching_waits()` turns that
moment into a `SilentWait` error inside the interpreter, which fails the kernel's call at once
with a sentence naming the semaphore, the bytes it waits for and the learner's line.

Kernels that run on several cores (remote DMAs between devices) are left to wait: there
another core may still signal.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["SilentWait", "silent_wait_message", "watching_waits"]

_local = threading.local()


class SilentWait(RuntimeError):
    """A `.wait()` on one core whose semaphore nothing will signal: on a TPU it never returns."""


def _where(logging_info: Any) -> str:
    """'at line 17 (kernel.py)' from the interpreter's source info of the wait, or ''."""
    source = getattr(logging_info, "source_info", None)
    if source is None:
        return ""
    from jax._src import source_info_util  # the interpreter's own type; no public home

    frame = source_info_util.user_frame(source.traceback)
    if frame is None:
        return ""
    name = frame.file_name.rsplit("/", 1)[-1]
    return f" at line {frame.start_line} of {name}"


def _message(sem: Any, value: int, core: int, logging_info: Any, has_tasks: bool) -> str:
    """The sentence for a wait that cannot return."""
    have = int(sem.count_by_core[core])
    what = f"{value} bytes" if has_tasks else f"a count of {value}"
    return (f"the kernel's `.wait()`{_where(logging_info)} waits on a DMA semaphore for {what}, but it "
            f"holds {have} and no copy started on it is still in flight, so nothing will ever signal it: "
            "on a TPU the kernel hangs there. Wait once for each copy you start, for that copy's bytes, "
            "on the semaphore that copy signals.")


def silent_wait_message(exc: BaseException) -> str | None:
    """The sentence of a `SilentWait` behind `exc` (which reaches the caller inside XLA's error), or None."""
    text = str(exc)
    marker = f"{SilentWait.__name__}: "
    if marker not in text:
        return None
    return text[text.rindex(marker) + len(marker):].strip().splitlines()[0]


class _WatchedCondition(threading.Condition):
    """The semaphore's condition: a wait on it with nothing pending on a one-core kernel raises."""

    def __init__(self, sem: Any) -> None:
        super().__init__()
        self._sem = sem

    def wait(self, timeout: float | None = None) -> bool:
        """Sleep as the interpreter asks, unless this is a one-core wait nothing can answer."""
        pending = getattr(_local, "pending", None)
        sem = self._sem
        if pending is not None and sem.num_cores == 1 and not any(sem.tasks):
            value, core, logging_info, has_tasks = pending
            if sem.count_by_core[core] < value:
                raise SilentWait(_message(sem, value, core, logging_info, has_tasks))
        return super().wait(timeout)


@contextlib.contextmanager
def watching_waits() -> Iterator[None]:
    """Within the block, the TPU interpreter's semaphores raise `SilentWait` instead of waiting forever."""
    from jax._src.pallas.mosaic.interpret import shared_memory  # the interpreter's internals

    cls = shared_memory.Semaphore
    if getattr(cls, "_course_watched", False):  # already inside a watched block
        yield
        return
    init, wait = cls.__init__, cls.wait

    def watched_init(self: Any, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        self.cv = _WatchedCondition(self)

    def watched_wait(self: Any, value: Any, global_core_id: Any, *, has_tasks: bool = False,
                     logging_info: Any = None) -> Any:
        _local.pending = (int(value), int(global_core_id), logging_info, has_tasks)
        try:
            return wait(self, value, global_core_id, has_tasks=has_tasks, logging_info=logging_info)
        finally:
            _local.pending = None

    cls.__init__, cls.wait, cls._course_watched = watched_init, watched_wait, True
    try:
        yield
    finally:
        cls.__init__, cls.wait = init, wait
        del cls._course_watched
