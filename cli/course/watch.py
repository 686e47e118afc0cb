"""`course watch`: re-grade the current exercise each time its file is saved; single keys for the rest.

`Watcher` holds watch mode's state and is driven by calls (`start`, `on_save`, `tick`, `on_key`),
so tests need no terminal; `run` is the real loop, feeding it file events (watchfiles, on the
folder, so editors that save by rename work too) and keys read in cbreak mode (Ctrl-C still
interrupts). It grades and records through the session's verbs, exactly as `course check` does,
and shows everything through `course.ui.views`: "checking" as soon as a save is seen, each
check's verdict as it ends, then the full verdict.
"""

from __future__ import annotations

import contextlib
import os
import queue
import secrets
import select
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from course import ui
from course.errors import CourseError, UsageError
from course.session import Session
from course.ui import views

if TYPE_CHECKING:
    from course.engine.isolation import Launcher
    from course.engine.verdict import ExerciseResult
    from course.registry import Exercise

NO_EVENTS = "file events are not available here ({reason}); run `course check` after each save instead."


class Watcher:
    """Watch mode's state: the exercise in hand, its last verdict, pending saves and questions."""

    def __init__(
        self,
        session: Session,
        *,
        worker: Launcher | None = None,
        clock: Callable[[], float] = time.monotonic,
        clear: Callable[[], None] | None = None,
        debounce_s: float = 0.2,
        quiet_s: float = 0.05,
        jobs: int = 0,
    ) -> None:
        self.session, self.worker, self.clock = session, worker, clock
        self.clear = clear or (lambda: None)
        self.debounce_s, self.quiet_s = debounce_s, quiet_s
        self.jobs = jobs or os.cpu_count() or 1
        now = session.current()
        self.name: str | None = now.name if now else None
        self.result: ExerciseResult | None = None
        self.busy = False
        self.done = False
        self.n_graded = 0
        # One seed per watch session: each save is graded on the same inputs, so a learner sees
        # the same failing case while fixing it, and programs compiled for them are reused from
        # the compilation cache. The final re-check of everything draws fresh inputs.
        self.seed = secrets.randbelow(2**31)
        self._first_save: float | None = None
        self._last_save = 0.0
        self._idle_since = clock()
        self._asking: str | None = None

    @property
    def exercise(self) -> Exercise:
        """The exercise being watched."""
        assert self.name is not None
        return self.session.exercise(self.name)

    @property
    def path(self) -> Path:
        """The learner's file of the watched exercise."""
        return self.session.submission(self.exercise)

    def start(self) -> None:
        """Grade the current exercise once (or, when all have passed, re-check them all)."""
        if self.name is None:
            self._finish()
        else:
            self.grade()

    def on_save(self, path: Path | str) -> bool:
        """Note a change to `path`; True when it is the watched file (graded once saves settle)."""
        if self.name is None or Path(path).resolve() != self.path.resolve():
            return False
        now = self.clock()
        if self._first_save is None and not self.busy:
            self._checking()  # said at once, before the save has settled
        self._first_save = self._first_save if self._first_save is not None else now
        self._last_save = now
        return True

    def due(self) -> bool:
        """True when a save is pending and has settled (quiet for a moment, or waited long enough)."""
        if self._first_save is None or self.busy:
            return False
        now = self.clock()
        return now - self._last_save >= self.quiet_s or now - self._first_save >= self.debounce_s

    def tick(self) -> ExerciseResult | None:
        """Grade if a save is due; the new verdict, or None."""
        return self.grade() if self.due() else None

    def grade(self) -> ExerciseResult:
        """Grade the watched exercise, record it like `course check`, and show the verdict."""
        if self._first_save is None:
            self._checking()
        self.busy, self._first_save = True, None
        try:
            (result,) = self.session.check(
                [self.exercise], jobs=1, seed=self.seed, worker=self.worker, on_event=views.watch_event
            )
        finally:
            self.busy, self._idle_since = False, self.clock()
        self.result, self.n_graded = result, self.n_graded + 1
        self.clear()
        views.watch_screen(self.session, result)
        return result

    def _checking(self) -> None:
        """A fresh screen saying which exercise is being checked."""
        self.clear()
        exercise = self.exercise
        views.watch_checking(exercise.name, exercise.position, len(self.session.course.exercises))

    def on_key(self, key: str, at: float | None = None) -> None:
        """Act on one key; keys pressed while grading (`at` before it ended) are ignored."""
        if self.busy or (at is not None and at < self._idle_since):
            return
        key = key.lower()
        if self._asking is not None:
            self._answer(key)
            return
        actions = {"q": self._quit, "h": self._hint, "l": self._list, "r": self._ask_reset, "n": self._next}
        action = actions.get(key)
        if action is not None:
            action()

    def _quit(self) -> None:
        """Leave watch mode."""
        self.done = True
        ui.line("Bye. `course watch` picks up where you left off.")

    def _hint(self) -> None:
        """The next hint level of the watched exercise."""
        if self.name is None:
            return
        try:
            views.hint(self.session.next_hint(self.exercise))
        except CourseError as exc:
            ui.line(str(exc))

    def _list(self) -> None:
        """The exercise table, below the last verdict."""
        views.course_list(self.session, with_next=False)
        ui.line(views.KEYS, style="dim")

    def _ask_reset(self) -> None:
        """Ask before replacing the learner's file with the stub."""
        if self.name is not None:
            self._asking = "reset"
            ui.line(f"Restore the stub of {self.name}? Your version is kept as a backup. [y/n]", style="bold")

    def _answer(self, key: str) -> None:
        """A y/n answer to the pending question; anything but y is no."""
        self._asking = None
        if key != "y":
            ui.line("Kept your file.")
            return
        backup = self.session.reset(self.exercise)
        ui.line(f"Restored {self.path}." + (f" Your version is kept at {backup}." if backup else ""))
        self.on_save(self.path)  # graded like any save (the file event, if it comes, merges in)

    def _next(self) -> None:
        """Move on, only once the watched exercise passes; after the last one, re-check them all."""
        if self.result is None or not self.result.passed:
            ui.line(f"{self.name} does not pass yet; fix it and save (h for a hint).")
            return
        pending = self.session.next_pending(self.name)
        self.name = pending.name if pending else None
        if self.name is None:
            self._finish()
        else:
            self.grade()

    def _finish(self) -> None:
        """Re-check every exercise; congratulate only if all still pass, else go to the first failing."""
        self.clear()
        ui.line("Every exercise has passed once; checking them all again...", style="bold")
        self.busy = True
        try:
            graded = self.session.check(self.session.course.exercises, jobs=self.jobs, worker=self.worker)
        finally:
            self.busy, self._idle_since = False, self.clock()
        failing = [r for r in graded if not r.passed]
        if not failing:
            ui.line(self.session.course.meta.final or views.ALL_PASS, style="bold green")
            self.done = True
            return
        self.name, self.result = failing[0].name, failing[0]
        self.clear()
        views.watch_screen(self.session, failing[0])


def run(session: Session, *, jobs: int = 0) -> None:
    """The real loop: file events and keys in, a fresh screen per verdict out, until `q` or Ctrl-C."""
    try:
        import watchfiles  # noqa: F401 - its absence is the one thing to tell the learner here
    except ImportError:
        raise UsageError(NO_EVENTS.format(reason="the watchfiles package is missing")) from None
    from course.engine.runner import start_worker

    events: queue.Queue[tuple[str, str, float]] = queue.Queue()
    stop = threading.Event()
    worker = start_worker(session.paths.cache)
    try:
        watcher = Watcher(session, worker=worker, clear=_clear, jobs=jobs)
        root = session.workspace / "exercises"
        threading.Thread(target=file_events, args=(root, events, stop), daemon=True).start()
        with _keys(events, stop, watcher.clock) as have_keys:
            if not have_keys:
                ui.info("keys need a terminal; Ctrl-C quits.")
            watcher.start()
            _loop(watcher, events)
    finally:
        stop.set()
        if worker is not None:
            worker.close()


def _loop(watcher: Watcher, events: queue.Queue[tuple[str, str, float]]) -> None:
    """Feed events to the watcher until it is done."""
    while not watcher.done:
        try:
            kind, value, at = events.get(timeout=0.02)
        except queue.Empty:
            watcher.tick()
            continue
        if kind == "save":
            watcher.on_save(value)
        elif kind == "key":
            watcher.on_key(value, at=at)
        elif kind == "error":
            raise UsageError(NO_EVENTS.format(reason=value))
        watcher.tick()


def file_events(root: Path, events: queue.Queue[tuple[str, str, float]], stop: threading.Event) -> None:
    """Put every change under `root` on the queue (the watcher filters); report a failure instead."""
    import watchfiles

    try:
        for changes in watchfiles.watch(root, debounce=200, step=20, stop_event=stop, raise_interrupt=False):
            for _change, path in changes:
                events.put(("save", path, time.monotonic()))
    except Exception as exc:  # inotify limits, a missing folder, an unsupported filesystem
        events.put(("error", f"{type(exc).__name__}: {exc}", 0.0))


@contextlib.contextmanager
def _keys(
    events: queue.Queue[tuple[str, str, float]], stop: threading.Event, clock: Callable[[], float]
) -> Iterator[bool]:
    """Read single keys from the terminal in cbreak mode (no echo, no Enter; Ctrl-C still works)."""
    if not sys.stdin.isatty():
        yield False
        return
    import termios
    import tty

    fd = sys.stdin.fileno()
    saved = termios.tcgetattr(fd)
    tty.setcbreak(fd)
    thread = threading.Thread(target=_read_keys, args=(fd, events, stop, clock), daemon=True)
    thread.start()
    try:
        yield True
    finally:
        stop.set()
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def _read_keys(fd: int, events: queue.Queue[Any], stop: threading.Event, clock: Callable[[], float]) -> None:
    """Put each key pressed on the queue, stamped with when it was read."""
    while not stop.is_set():
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            for key in os.read(fd, 32).decode(errors="ignore"):
                events.put(("key", key, clock()))


def _clear() -> None:
    """Clear the terminal (nothing when stdout is not one)."""
    if ui.out.is_terminal:
        ui.out.clear()
