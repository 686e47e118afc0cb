"""The loop of `course watch`: file events and keys in, `course.watch.Watcher` driven, screens out.

File events come from watchfiles on the exercises folder (so editors that save by rename work
too), keys are read in cbreak mode (no echo, no Enter; Ctrl-C still interrupts), and gradings
post their check events and results back; all of it arrives on one queue, and the watcher is
driven from this thread alone. The progress line is kept at the bottom of the screen.
"""

from __future__ import annotations

import contextlib
import os
import queue
import select
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from course import ui
from course.errors import UsageError
from course.session import Session
from course.ui import watching
from course.watch import Watcher

if TYPE_CHECKING:
    from course.registry import Exercise

NO_EVENTS = "file events are not available here ({reason}); run `course check` after each save instead."


def require_terminal() -> None:
    """Watch reads keys: without a terminal it would wait for nothing, so it says what to do instead."""
    if not sys.stdin.isatty():
        raise UsageError(watching.NO_TERMINAL)


def run(session: Session, exercise: Exercise | None = None, *, jobs: int = 0) -> None:
    """The real loop: file events and keys in, a fresh screen per verdict out, until `q` or Ctrl-C."""
    require_terminal()
    try:
        import watchfiles  # noqa: F401 - its absence is the one thing to tell the learner here
    except ImportError:
        raise UsageError(NO_EVENTS.format(reason="the watchfiles package is missing")) from None
    from course.engine.parent.runner import start_worker

    events: queue.Queue[tuple[str, Any]] = queue.Queue()
    stop = threading.Event()
    worker = start_worker(session.paths.cache)
    watcher = None
    try:
        footer = watching.Footer(session)
        watcher = Watcher(session, exercise, worker=worker, clear=_clear, jobs=jobs, post=events.put, footer=footer)
        threading.Thread(target=file_events, args=(session.workspace / "exercises", events, stop), daemon=True).start()
        with _keys(events, stop), ui.live(footer, transient=False, refresh_per_second=4) as redraw:
            try:
                watcher.start()
                _loop(watcher, events, redraw)
            except KeyboardInterrupt:  # Ctrl-C is a way to quit like any other: it says what `q` says
                watcher.quit()
    finally:
        stop.set()
        _end(watcher, worker)


def _end(watcher: Watcher | None, worker: Any) -> None:
    """Stop the grading in flight and wait (briefly) until its process group is gone, then end the worker.

    The group is killed at once rather than when the grading's thread next looks at its cancel
    switch. The worker is told to stop by a signal rather than asked to: it holds JAX, whose
    orderly teardown takes most of a second, and it has nothing to save (the grading it ran is
    dead). After a quit the process ends at once (`course.cli.watch`), so the worker's exit is
    not waited for; after a failure it is, as at any exit.
    """
    from course.engine.parent import tree

    if watcher is not None:
        watcher.stop()  # the grading waiting for a save is called off too
    tree.stop_all()
    deadline = time.monotonic() + 5
    for thread in watcher.ending() if watcher is not None else []:
        thread.join(timeout=max(deadline - time.monotonic(), 0))  # its clean-up removes the grading's work folder
    if worker is not None:
        with contextlib.suppress(OSError):
            os.kill(worker.pid, signal.SIGTERM)
        if watcher is None or not watcher.done:
            worker.close()


def _loop(watcher: Watcher, events: queue.Queue[tuple[str, Any]], redraw: Callable[[], None] = lambda: None) -> None:
    """Feed messages to the watcher until it is done, redrawing the footer after each: it shows the new
    state (checking, the check running, passes) at once, not at its next timed refresh, up to a
    quarter of a second later, which a verdict's screen would otherwise wait for to settle."""
    while not watcher.done:
        try:
            kind, value = events.get(timeout=watcher.until_due(0.02))
        except queue.Empty:
            watcher.tick()
            continue
        handle(watcher, kind, value)
        watcher.tick()
        redraw()


def handle(watcher: Watcher, kind: str, value: Any) -> None:
    """Give the watcher one message: a save, a key, a grading's check event, result or failure (a failure of a
    grading that no longer counts, superseded or called off, is dropped like its verdict)."""
    if kind == "save":
        watcher.on_save(value)
    elif kind == "key":
        watcher.on_key(value)
    elif kind == "check":
        watcher.on_event(*value)
    elif kind == "graded":
        watcher.on_graded(*value)
    elif kind == "failed" and watcher.grading is not None and value[0] == watcher.grading.id:
        raise value[1]
    elif kind == "error":
        raise UsageError(NO_EVENTS.format(reason=value))


def file_events(root: Path, events: queue.Queue[tuple[str, Any]], stop: threading.Event) -> None:
    """Put every change under `root` on the queue (the watcher filters); report a failure instead."""
    import watchfiles

    try:
        for changes in watchfiles.watch(root, debounce=50, step=10, stop_event=stop, raise_interrupt=False):
            for _change, path in changes:
                events.put(("save", path))
    except Exception as exc:  # inotify limits, a missing folder, an unsupported filesystem
        events.put(("error", f"{type(exc).__name__}: {exc}"))


@contextlib.contextmanager
def _keys(events: queue.Queue[tuple[str, Any]], stop: threading.Event) -> Iterator[None]:
    """Read single keys from the terminal in cbreak mode (no echo, no Enter; Ctrl-C still works)."""
    import termios
    import tty

    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    tty.setcbreak(fd)
    thread = threading.Thread(target=_read_keys, args=(fd, events, stop), daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def _read_keys(fd: int, events: queue.Queue[Any], stop: threading.Event) -> None:
    """Put each key pressed on the queue."""
    while not stop.is_set():
        ready, _, _ = select.select([fd], [], [], 0.05)
        if ready:
            for key in os.read(fd, 32).decode(errors="ignore"):
                events.put(("key", key))


def _clear() -> None:
    """Clear the terminal (nothing when stdout is not one)."""
    if ui.out.is_terminal:
        ui.out.clear()
