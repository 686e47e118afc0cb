"""`course watch [NAME]`: re-grade an exercise each time its file is saved; single keys for the rest.

`Watcher` holds watch mode's state and is driven by calls (`start`, `on_save`, `tick`, `on_key`,
`on_graded`), all from one thread. Given `post`, each grading runs on a thread of its own
that posts its check events and its result back as messages, so keys and saves are handled
while a check runs: a save of a new version cancels the grading in flight (its process group
is killed at once) and grades the new one, `q` cancels and quits, `n` moves on or says why
not, `h` shows the next hint in place. Without `post` (the tests' hand-driven clock)
a grading runs inline. The real loop is `course.watch_loop`; the screens are `course.ui.watching`.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from course import ui
from course.errors import CourseError
from course.session import Session
from course.ui import verdicts, views, watching

if TYPE_CHECKING:
    from course.engine.parent.isolation import Launcher
    from course.engine.parent.verdict import CheckEvent, ExerciseResult
    from course.engine.wire.gate import Gate
    from course.registry import Exercise

Post = Callable[[tuple[str, Any]], None]
_ids = itertools.count(1)


@dataclass
class Grading:
    """One grading in flight: what it grades, the file's content when it started, and its stop switch."""

    names: list[str]
    digest: bytes
    cancel: threading.Event = field(default_factory=threading.Event)
    id: int = field(default_factory=lambda: next(_ids))
    thread: threading.Thread | None = None
    gate: Gate | None = None
    """Set for a grading started ahead of the next save, which opens it (`course.engine.wire.gate`)."""


class Watcher:
    """Watch mode's state: the exercise in hand, its last verdict, the grading in flight, pending saves."""

    def __init__(self, session: Session, exercise: Exercise | None = None, *, worker: Launcher | None = None,
                 clock: Callable[[], float] = time.monotonic, clear: Callable[[], None] | None = None,
                 debounce_s: float = 0.2, quiet_s: float = 0.01, jobs: int = 0, post: Post | None = None,
                 footer: watching.Footer | None = None) -> None:
        self.session, self.worker, self.clock = session, worker, clock
        self.clear = clear or (lambda: None)
        self.debounce_s, self.quiet_s = debounce_s, quiet_s
        self.jobs = jobs or os.cpu_count() or 1
        self.post = post  # given: gradings run in the background and report through it
        self.footer = footer or watching.Footer(session)
        now = exercise or session.current()
        self.name: str | None = now.name if now else None
        self.result: ExerciseResult | None = None
        self.passed_digest: bytes | None = None
        self.grading: Grading | None = None
        self.armed: Grading | None = None
        """The next grading of the watched file, started and waiting for its save (background mode only)."""
        self.called_off: list[threading.Thread] = []
        self.done = False
        self.n_graded = 0
        # One seed per watch session: each save is graded on the same inputs, so a learner sees
        # the same failing case while fixing it, and programs compiled for them are reused from
        # the compilation cache. The final re-check of everything draws fresh inputs.
        self.seed = secrets.randbelow(2**31)
        self._first_save: float | None = None
        self._last_save = 0.0
        self._asking: str | None = None
        self.footer.name = self.name

    @property
    def exercise(self) -> Exercise:
        """The exercise being watched."""
        assert self.name is not None
        return self.session.exercise(self.name)

    @property
    def path(self) -> Path:
        """The learner's file of the watched exercise."""
        return self.session.submission(self.exercise)

    @property
    def busy(self) -> bool:
        """True while a grading that still counts is in flight."""
        return self.grading is not None and not self.grading.cancel.is_set()

    def start(self) -> None:
        """Grade the watched exercise once (or, when all have passed, re-check them all)."""
        if self.name is None:
            self._finish()
        else:
            self.grade()

    def on_save(self, path: Path | str) -> bool:
        """Note a change to `path`; True when it is the watched file (graded once saves settle).

        A save during a grading cancels it, unless the file still holds what is being graded.
        """
        if self.name is None or Path(path).resolve() != self.path.resolve():
            return False
        if self.busy:
            assert self.grading is not None
            if _digest(self.path) == self.grading.digest:
                return True  # touched, not changed: the verdict in flight is still the right one
            self.grading.cancel.set()
            self._checking(again=True)
        elif self._first_save is None:
            self._checking()  # said at once, before the save has settled
        now = self.clock()
        self._first_save = self._first_save if self._first_save is not None else now
        self._last_save = now
        return True

    def due(self) -> bool:
        """True when a save is pending and has settled (quiet for a moment, or waited long enough)."""
        if self._first_save is None or self.busy:
            return False
        now = self.clock()
        return now - self._last_save >= self.quiet_s or now - self._first_save >= self.debounce_s

    def until_due(self, longest: float) -> float:
        """Seconds until a pending save is due (at most `longest`, which is also the wait with none pending),
        so the loop wakes when the grading should start, not at its next timed tick."""
        if self._first_save is None or self.busy:
            return longest
        now = self.clock()
        due = min(self._last_save + self.quiet_s, self._first_save + self.debounce_s)
        return min(longest, max(due - now, 0.0))

    def tick(self) -> ExerciseResult | None:
        """Grade if a save is due; the new verdict when it came at once (inline gradings), else None."""
        return self.grade() if self.due() else None

    def grade(self) -> ExerciseResult | None:
        """Grade the watched exercise: inline, returning its verdict, or in the background (None)."""
        if self._first_save is None:
            self._checking()
        self._first_save = None
        if self._fire():
            return None
        return self._launch([self.exercise], _digest(self.path))

    def _fire(self) -> bool:
        """Let the grading started ahead run on the file as it is now; False when there is none to use, or when
        the file needs no grading (missing, the stub, not compiling: a grading of its own says so at once, and
        the one waiting stays for the next save)."""
        from course.engine.parent.runner import precheck

        armed = self.armed
        if armed is None or armed.gate is None:
            return False
        if not self._waiting(armed):
            self._disarm()
            return False
        if precheck(self.exercise, self.path, self.seed) is not None:
            return False
        self.armed = None
        armed.digest = _digest(self.path)
        self.grading = armed
        self.footer.state, self.footer.since = "checking", self.clock()
        armed.gate.open()
        self._arm()  # the next one starts beside this check, so that a save during it need not wait for a start
        return True

    def _waiting(self, armed: Grading) -> bool:
        """Whether `armed` is a grading of the watched exercise still waiting at its gate."""
        return armed.names == [self.name] and armed.thread is not None and armed.thread.is_alive()

    def _arm(self) -> None:
        """Start the next grading of the watched file now, to wait for its save (`course.engine.wire.gate`); one
        already waiting is kept."""
        from course.engine.wire.gate import Gate

        if self.armed is not None and self._waiting(self.armed):
            return
        self._disarm()
        if self.post is None or self.name is None or self.exercise.meta.processes > 1:
            return
        self.armed = Grading([self.name], b"", gate=Gate())
        self._start(self.armed, [self.exercise])

    def _disarm(self) -> None:
        """Call off the grading waiting for a save (its processes end at once; `ending` waits for its thread)."""
        if self.armed is not None:
            self.armed.cancel.set()
            self.called_off = [t for t in (*self.called_off, self.armed.thread) if t is not None and t.is_alive()]
            self.armed = None

    def ending(self) -> list[threading.Thread]:
        """The threads of gradings called off or in flight that have not finished: their clean-up removes their
        work folders, so watch waits for them (briefly) before it ends."""
        threads = [*self.called_off, *(g.thread for g in (self.grading, self.armed) if g is not None and g.thread)]
        return [t for t in threads if t is not None and t.is_alive()]

    def _launch(self, exercises: list[Exercise], digest: bytes) -> ExerciseResult | None:
        """Start a grading of `exercises`; inline, wait for it and take its verdict."""
        grading = Grading([e.name for e in exercises], digest)
        self.grading = grading
        self.footer.state, self.footer.since = "checking", self.clock()
        if self.post is None:
            results = self.session.grade(exercises, jobs=self.jobs, seed=self._seed(exercises), worker=self.worker,
                                         on_event=watching.event if len(exercises) == 1 else None)
            return self.on_graded(grading.id, results)
        self._start(grading, exercises)
        return None

    def _start(self, grading: Grading, exercises: list[Exercise]) -> None:
        """Run `grading` on a thread of its own, which posts its check events and its results back."""
        post = self.post
        assert post is not None

        def work() -> None:
            """Grade on this thread; hand the results (or the failure) back to the loop."""
            try:
                results = self.session.grade(
                    exercises, jobs=self.jobs, seed=self._seed(exercises), worker=self.worker,
                    on_event=(lambda e: post(("check", (grading.id, e)))) if len(exercises) == 1 else None,
                    cancel=grading.cancel, gate=grading.gate)
            except BaseException as exc:  # noqa: BLE001 - the loop's thread reports it, at its edge
                post(("failed", (grading.id, exc)))
            else:
                post(("graded", (grading.id, results)))

        grading.thread = threading.Thread(target=work, daemon=True, name=f"grading-{grading.id}")
        grading.thread.start()

    def _seed(self, exercises: list[Exercise]) -> int | None:
        """The session's seed for the watched exercise; fresh inputs for the final re-check of all."""
        return self.seed if len(exercises) == 1 else None

    def on_event(self, grading_id: int, check: CheckEvent) -> None:
        """A check of a background grading has ended: show it, if that grading still counts."""
        if self.grading is not None and grading_id == self.grading.id and self.busy:
            self.footer.running = check if check.status == verdicts.RUNNING else None
            watching.event(check)

    def on_graded(self, grading_id: int, results: list[ExerciseResult]) -> ExerciseResult | None:
        """A grading has ended: record and show its verdict, unless it was cancelled or superseded."""
        grading = self.grading
        if grading is None or grading_id != grading.id or grading.cancel.is_set():
            return None
        self.grading = None
        self.footer.state, self.footer.since, self.footer.running = "", None, None
        exercises = [self.session.exercise(n) for n in grading.names]
        if len(results) > 1:
            self.session.record(exercises, results)
            return self._after_all(results)
        (result,) = results
        self.result, self.n_graded = result, self.n_graded + 1
        self.passed_digest = grading.digest if result.passed else None
        self.footer.state = "passes" if result.passed else "not yet"
        self.clear()
        watching.screen(self.session, result)
        # Recorded once shown: the lock and the flush to disk need not delay the verdict.
        self.session.record(exercises, results)
        self._arm()
        return result

    def _checking(self, *, again: bool = False) -> None:
        """A fresh screen saying which exercise is being checked."""
        self.clear()
        exercise = self.exercise
        watching.checking(exercise.name, exercise.position, len(self.session.course.exercises), again=again)
        self.footer.state, self.footer.since = "checking", self.clock()

    def on_key(self, key: str) -> None:
        """Act on one key, whether or not a check is running."""
        key = key.lower()
        if self._asking is not None:
            self._answer(key)
            return
        actions = {"q": self.quit, "h": self._hint, "l": self._list, "r": self._ask_reset, "n": self._next,
                   "t": self._task}
        action = actions.get(key)
        if action is not None:
            action()

    def stop(self) -> None:
        """End the grading in flight and call off the one waiting for a save."""
        if self.grading is not None:
            self.grading.cancel.set()
        self._disarm()

    def quit(self) -> None:
        """Leave watch mode, ending the grading in flight."""
        self.stop()
        self.done = True
        ui.line("Bye. `course watch` picks up where you left off.")

    def _hint(self) -> None:
        """The next hint level of the watched exercise, in place."""
        if self.name is None:
            return
        try:
            views.hint(self.session.next_hint(self.exercise), in_watch=True)
        except CourseError as exc:
            ui.line(str(exc))

    def _task(self) -> None:
        """The task of the watched exercise, in place (after `n`, the new one's)."""
        if self.name is not None:
            watching.task(self.session, self.exercise)

    def _list(self) -> None:
        """The exercise table, below the last verdict."""
        views.course_list(self.session, with_next=False, reserve=watching.FOOTER_LINES + 1)
        ui.line(watching.KEYS, style="dim")

    def _ask_reset(self) -> None:
        """Ask before replacing the learner's file with the stub."""
        if self.name is not None and self.session.is_stub_now(self.exercise):
            ui.line(f"{self.name} is still the stub: nothing to restore.")
        elif self.name is not None:
            self._asking = "reset"
            ui.line(f"Restore the stub of {self.name}? Your version is kept as a backup. [y/n]", style="bold")

    def _answer(self, key: str) -> None:
        """A y/n answer to the pending question; anything but y is no."""
        self._asking = None
        if key != "y":
            ui.line("Kept your file.")
            return
        backup = self.session.reset(self.exercise)
        kept = f" Your version is kept at {ui.shown_path(backup)}." if backup else ""
        ui.line(f"Restored {ui.shown_path(self.path)}.{kept}")
        self.on_save(self.path)  # graded like any save (the file event, if it comes, merges in)

    def _next(self) -> None:
        """Move on once the watched exercise passes; during a check, only if what is checked has passed."""
        if self.busy and self.grading is not None and len(self.grading.names) > 1:
            ui.line("n: every exercise is being checked again; wait for the verdict.")
            return
        if self.busy or self._first_save is not None:  # a check runs, or a save is about to be checked
            checked = _digest(self.path) if self.grading is None or not self.busy else self.grading.digest
            passed_before = self.passed_digest == checked or (
                self.result is None and self.session.status(self.exercise) == "passed")
            if not passed_before:
                ui.line(f"n: {self.name} is being checked; it moves on once that check passes (h for a hint).")
                return
            if self.grading is not None:
                self.grading.cancel.set()
            self._first_save = None
        elif self.result is not None and self.result.not_tried:  # nothing to fix yet: say where to start
            ui.line(f"n moves on once {self.name} passes, and it is not started yet: press t for its task, then "
                    f"edit {ui.shown_path(self.path)} and save it.")
            return
        elif self.result is None or not self.result.passed:
            ui.line(f"{self.name} does not pass yet; fix it and save (h for a hint).")
            return
        pending = self.session.next_pending(self.name)
        self.name = pending.name if pending else None
        self.footer.name = self.name
        self.result, self.passed_digest = None, None
        if self.name is None:
            self._finish()
        else:
            self.grade()

    def _finish(self) -> ExerciseResult | None:
        """Re-check every exercise; congratulate only if all still pass, else go to the first failing."""
        self._disarm()
        self.clear()
        ui.line("Every exercise has passed once; checking them all again...", style="bold")
        return self._launch(self.session.course.exercises, b"")

    def _after_all(self, graded: list[ExerciseResult]) -> ExerciseResult | None:
        """The verdict of the re-check of everything."""
        failing = [r for r in graded if not r.passed]
        if not failing:
            ui.line(self.session.course.meta.final or views.ALL_PASS, style="bold green")
            self.done = True
            return None
        self.name, self.result = failing[0].name, failing[0]
        self.footer.name, self.footer.state = self.name, "not yet"
        self.clear()
        watching.screen(self.session, failing[0])
        return failing[0]


def _digest(path: Path) -> bytes:
    """What the file holds now, as a hash (a file being rewritten reads as changed)."""
    try:
        return hashlib.sha256(path.read_bytes()).digest()
    except OSError:
        return secrets.token_bytes(8)
