"""`course watch`: a save gives a verdict, keys do what they say, and it never moves on by itself."""

from __future__ import annotations

import os
import queue
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from course.engine.parent.runner import start_worker
from course.engine.parent.worker import Worker
from course.progress import ProgressStore
from course.session import Session, init_workspace
from course.ui.watching import NO_TERMINAL
from course.watch import Grading, Watcher, _digest
from course.watch_loop import handle
from support import ended, git_commit
from terminal import Terminal

MINI = Path(__file__).parent / "fixtures" / "mini_course"
SOLVED = "def double(x):\n    return 2 * x\n"


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def course_dir(tmp_path: Path) -> Path:
    """A copy of the mini course with just its first two exercises."""
    root = tmp_path / "course"
    shutil.copytree(MINI, root, ignore=shutil.ignore_patterns(".course", "__pycache__"))
    toml = root / "course.toml"
    toml.write_text(
        toml.read_text().replace('"ex_syntax", "ex_loop", "ex_exit_import", "ex_os_exit", "ex_no_tests"', "")
    )
    return root


@pytest.fixture
def state(course_dir: Path, tmp_path: Path) -> Session:
    """A fresh learner workspace made by `course init`, opened as a session."""
    init_workspace(course_dir, tmp_path / "ws")
    return Session.open(course_dir, tmp_path / "ws")


@pytest.fixture(scope="module")
def worker() -> Iterator[Worker]:
    """One warm worker shared by the module's watchers, so each save is graded quickly."""
    started = start_worker()
    assert started is not None, "the warm worker runs on Linux"
    yield started
    started.close()


@pytest.fixture
def watcher(state: Session, worker: Worker) -> Watcher:
    """A watcher on a hand-moved clock, already showing the first verdict (ex_pass passes)."""
    watcher = Watcher(state, clock=Clock(), worker=worker)
    watcher.start()
    return watcher


def test_start_grades_the_current_exercise(state: Session, capsys: pytest.CaptureFixture[str]) -> None:
    """The first screen is the verdict of the first exercise, check by check."""
    watcher = Watcher(state, clock=Clock())
    watcher.start()
    out = capsys.readouterr().out
    assert watcher.name == "ex_pass"
    assert watcher.result is not None and watcher.result.passed
    assert "double returns twice its input." in out
    assert "Press n for the next exercise" in out


def test_save_gives_a_verdict_and_records_progress(watcher: Watcher, capsys: pytest.CaptureFixture[str]) -> None:
    """After moving on, a save of the learner's file is graded once it settles, and recorded."""
    watcher.on_key("n")
    assert watcher.name == "ex_fail" and watcher.result is not None and not watcher.result.passed
    watcher.path.write_text(SOLVED)
    assert watcher.on_save(watcher.path)
    assert watcher.tick() is None  # not settled yet: an editor may still be writing
    watcher.clock.now += 0.1  # type: ignore[attr-defined]
    result = watcher.tick()
    assert result is not None and result.passed
    assert "ex_fail passes" in capsys.readouterr().out
    assert ProgressStore(watcher.session.paths).load().exercises["ex_fail"].status == "passed"


def test_a_save_says_checking_at_once_then_each_check(watcher: Watcher, capsys: pytest.CaptureFixture[str]) -> None:
    """The moment a save is seen, before it settles, the screen says it is checking; then each
    check's verdict appears as the grading reports it, before the full verdict."""
    capsys.readouterr()
    assert watcher.on_save(watcher.path)
    assert "checking ex_pass..." in capsys.readouterr().out
    watcher.clock.now += 0.1  # type: ignore[attr-defined]
    assert watcher.tick() is not None
    out = capsys.readouterr().out
    live = out.index("double returns twice its input.")
    assert out.index("double(0) is 0.") > live and "Press n for the next exercise" in out[live:]
    assert out.count("double returns twice its input.") == 2  # as it ended, then in the verdict


def test_a_burst_of_saves_is_graded_once(watcher: Watcher) -> None:
    """Saves that keep coming are merged, and graded at most debounce_s after the first."""
    clock = watcher.clock
    graded = watcher.n_graded
    for _ in range(5):
        watcher.on_save(watcher.path)
        assert watcher.until_due(1.0) == pytest.approx(watcher.quiet_s)  # the loop wakes when it is due
        clock.now += watcher.quiet_s / 2  # type: ignore[attr-defined]
        assert watcher.tick() is None
    assert watcher.until_due(1.0) == pytest.approx(watcher.quiet_s / 2)
    clock.now += watcher.quiet_s  # type: ignore[attr-defined]
    assert watcher.until_due(1.0) == 0.0
    assert watcher.tick() is not None
    assert watcher.until_due(1.0) == 1.0  # nothing pending
    assert watcher.tick() is None
    assert watcher.n_graded == graded + 1


def _pump(watcher: Watcher, events: queue.Queue[tuple[str, Any]], until: Callable[[], bool]) -> None:
    """Feed the background gradings' messages to the watcher, as the real loop does, until `until()` holds."""
    deadline = time.monotonic() + 120
    while not until():
        assert time.monotonic() < deadline, "the watcher never got there"
        try:
            kind, value = events.get(timeout=0.02)
        except queue.Empty:
            watcher.tick()
            continue
        handle(watcher, kind, value)
        watcher.tick()


@pytest.fixture
def background(state: Session, worker: Worker) -> Iterator[tuple[Watcher, queue.Queue[tuple[str, Any]]]]:
    """A watcher grading in the background, as `course watch` does, once its first verdict is shown."""
    events: queue.Queue[tuple[str, Any]] = queue.Queue()
    watcher = Watcher(state, worker=worker, post=events.put)
    watcher.start()
    _pump(watcher, events, lambda: watcher.result is not None)
    yield watcher, events
    watcher.quit()


def test_a_save_runs_the_grading_started_ahead_of_it(background: tuple[Watcher, queue.Queue[tuple[str, Any]]]) -> None:
    """Once a verdict is shown, the next grading of the file is already started and waits; the save lets it
    go, on the file as saved, and the one after it is started in turn."""
    watcher, events = background
    ahead = watcher.armed
    assert ahead is not None and ahead.thread is not None and ahead.thread.is_alive() and watcher.grading is None
    time.sleep(0.5)
    assert ahead.thread.is_alive(), "the grading started ahead ran without a save"
    watcher.path.write_text("def double(x):\n    return x + x\n")
    assert watcher.on_save(watcher.path)
    _pump(watcher, events, lambda: watcher.grading is not None)
    assert watcher.grading is ahead and ahead.digest == _digest(watcher.path)
    _pump(watcher, events, lambda: watcher.grading is None)
    assert watcher.result is not None and watcher.result.passed and watcher.n_graded == 2
    assert watcher.armed is not None and watcher.armed is not ahead


def test_the_duration_shown_is_the_time_since_the_save(
    background: tuple[Watcher, queue.Queue[tuple[str, Any]]]
) -> None:
    """The grading started ahead waits for the save; the duration its verdict shows counts from the save on,
    not the seconds it waited before it."""
    watcher, events = background
    ahead = watcher.armed
    assert ahead is not None
    time.sleep(3)  # the learner reads the verdict and edits: the grading ahead waits at its gate
    watcher.path.write_text("def double(x):\n    return x + x\n")
    saved = time.monotonic()
    assert watcher.on_save(watcher.path)
    _pump(watcher, events, lambda: watcher.n_graded == 2)
    assert watcher.grading is None and watcher.result is not None and watcher.result.passed
    assert 0 < watcher.result.duration_s <= time.monotonic() - saved


def test_a_save_during_a_check_is_graded_by_a_grading_started_beside_it(
    background: tuple[Watcher, queue.Queue[tuple[str, Any]]]
) -> None:
    """When a save lets the waiting grading go, the next one starts beside that check: a save during the check
    (here one that never ends) calls it off and is graded by the grading already started, not one started then."""
    watcher, events = background
    ahead = watcher.armed
    assert ahead is not None
    watcher.path.write_text("def double(x):\n    while True:\n        pass\n")
    watcher.on_save(watcher.path)
    _pump(watcher, events, lambda: watcher.grading is ahead)
    beside = watcher.armed
    assert beside is not None and beside is not ahead and beside.thread is not None and beside.thread.is_alive()
    watcher.path.write_text(SOLVED)
    watcher.on_save(watcher.path)
    assert ahead.cancel.is_set()
    _pump(watcher, events, lambda: watcher.grading is beside)
    _pump(watcher, events, lambda: watcher.grading is None)
    assert watcher.result is not None and watcher.result.passed and watcher.n_graded == 2


def test_a_save_that_needs_no_grading_keeps_the_one_started_ahead(
    background: tuple[Watcher, queue.Queue[tuple[str, Any]]], capsys: pytest.CaptureFixture[str]
) -> None:
    """A file that does not compile is said at once, as always, and the waiting grading is not let go on it: it
    waits on for the next save, which it grades; the one after it is called off when watch quits."""
    watcher, events = background
    ahead = watcher.armed
    assert ahead is not None
    capsys.readouterr()
    watcher.path.write_text("def double(x):\n    return (\n")
    watcher.on_save(watcher.path)
    _pump(watcher, events, lambda: watcher.n_graded == 2)
    assert watcher.result is not None and not watcher.result.passed and watcher.grading is None
    assert "SyntaxError" in capsys.readouterr().out
    assert watcher.armed is ahead and not ahead.cancel.is_set() and ahead.thread is not None
    assert ahead.thread.is_alive()
    watcher.path.write_text(SOLVED)
    watcher.on_save(watcher.path)
    _pump(watcher, events, lambda: watcher.grading is ahead)
    _pump(watcher, events, lambda: watcher.n_graded == 3)
    assert watcher.result is not None and watcher.result.passed
    again = watcher.armed
    assert again is not None and again is not ahead
    watcher.quit()
    assert again.cancel.is_set() and watcher.armed is None


def test_other_files_are_ignored(watcher: Watcher) -> None:
    """A change to any other file (an editor's temp file, another exercise) grades nothing."""
    assert not watcher.on_save(watcher.path.with_name("4913"))
    assert not watcher.on_save(watcher.path.parent.parent / "02_ex_fail" / "ex_fail.py")
    watcher.clock.now += 1  # type: ignore[attr-defined]
    assert watcher.tick() is None


def test_no_auto_advance_and_n_only_once_passed(course_dir: Path, watcher: Watcher,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """A pass never moves on by itself; `n` on an exercise not started stays and says where to start, and on
    a failing one, that it does not pass yet."""
    from course import stubs

    stub = 'def double(x):\n    """Twice x."""\n    raise NotImplementedError("double is not written yet")\n'
    lock = course_dir / "exercises/stubs.lock"  # ex_fail's stub becomes one that leaves the work to the learner
    recorded = f'ex_fail = "{stubs.fingerprint(stub.encode())}"'
    lock.write_text(re.sub(r'(?m)^ex_fail = ".*"$', recorded, lock.read_text()))
    for path in (course_dir / "exercises/02_ex_fail/ex_fail.py", watcher.path.parent.parent / "02_ex_fail/ex_fail.py"):
        path.write_text(stub)
    watcher.on_save(watcher.path)
    watcher.clock.now += 1  # type: ignore[attr-defined]
    assert watcher.tick() is not None and watcher.name == "ex_pass"
    watcher.on_key("n")
    assert watcher.name == "ex_fail" and watcher.result is not None and watcher.result.not_tried
    capsys.readouterr()
    watcher.on_key("n")
    said = " ".join(capsys.readouterr().out.split())
    assert watcher.name == "ex_fail" and "does not pass yet" not in said and "fix it" not in said
    assert "ex_fail passes, and it is not started yet: press t for its task, then edit" in said
    assert "ex_fail.py and save it" in said
    watcher.path.write_text(watcher.path.read_text() + "# mine\n")
    watcher.on_save(watcher.path)
    watcher.clock.now += 1  # type: ignore[attr-defined]
    assert watcher.tick() is not None and not watcher.result.passed  # type: ignore[union-attr]
    capsys.readouterr()
    watcher.on_key("n")
    assert watcher.name == "ex_fail" and "ex_fail does not pass yet; fix it and save" in capsys.readouterr().out


def test_n_during_a_check_says_why_unless_what_runs_has_passed(watcher: Watcher,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """`n` while a new version is checked stays and says why; while the version that passed is checked
    again, it stops that check and moves on."""
    watcher.on_key("n")  # ex_pass passed: on to ex_fail
    watcher.grading = Grading(["ex_fail"], _digest(watcher.path))
    capsys.readouterr()
    watcher.on_key("n")
    assert watcher.name == "ex_fail" and "ex_fail is being checked" in capsys.readouterr().out
    watcher.grading = None
    watcher.path.write_text(SOLVED)
    watcher.on_save(watcher.path)
    watcher.clock.now += 1  # type: ignore[attr-defined]
    assert watcher.tick().passed  # type: ignore[union-attr]
    running = Grading(["ex_fail"], _digest(watcher.path))
    watcher.grading = running
    watcher.on_key("n")
    assert running.cancel.is_set() and watcher.name != "ex_fail"


def test_a_new_save_during_a_check_cancels_it(watcher: Watcher, capsys: pytest.CaptureFixture[str]) -> None:
    """A save of a new version cancels the grading in flight, says so at once, and is graded once it
    settles; a save that leaves the file as it was (a touch) cancels nothing."""
    running = Grading(["ex_pass"], _digest(watcher.path))
    watcher.grading = running
    watcher.on_save(watcher.path)
    assert not running.cancel.is_set() and not watcher.due()
    watcher.path.write_text("def double(x):\n    return x\n")
    capsys.readouterr()
    assert watcher.on_save(watcher.path)
    assert running.cancel.is_set() and "saved again: checking the new version" in capsys.readouterr().out
    watcher.clock.now += 0.1  # type: ignore[attr-defined]
    result = watcher.tick()
    assert result is not None and not result.passed and watcher.grading is None


def test_a_superseded_or_cancelled_verdict_is_dropped(watcher: Watcher) -> None:
    """A verdict that arrives for a grading no longer in hand is neither shown nor recorded."""
    from course.engine.parent.verdict import ExerciseResult

    before = watcher.session.status(watcher.exercise)
    old = Grading(["ex_pass"], b"")
    watcher.grading = Grading(["ex_pass"], b"")
    assert watcher.on_graded(old.id, [ExerciseResult("ex_pass", "failed")]) is None
    watcher.grading.cancel.set()
    assert watcher.on_graded(watcher.grading.id, [ExerciseResult("ex_pass", "failed")]) is None
    assert watcher.session.status(watcher.exercise) == before == "passed"


def test_hint_and_list_keys(watcher: Watcher, capsys: pytest.CaptureFixture[str]) -> None:
    """`h` shows the next hint level; `l` shows the exercise table."""
    capsys.readouterr()
    watcher.on_key("h")
    watcher.on_key("h")
    out = capsys.readouterr().out
    assert "Hint 1 of 3 for ex_pass" in out and "Hint 2 of 3 for ex_pass" in out
    assert "Press h for the next one." in out and "course hint" not in out
    watcher.on_key("l")
    out = capsys.readouterr().out
    assert "ex_fail" in out and "passed" in out


def test_reset_asks_first(watcher: Watcher) -> None:
    """`r` restores the stub only after `y`; any other answer keeps the learner's file."""
    watcher.path.write_text("# mine\n")
    watcher.on_key("r")
    watcher.on_key("n")
    assert watcher.path.read_text() == "# mine\n"
    assert watcher.name == "ex_pass"  # the answer was not taken as `next`
    watcher.on_key("r")
    watcher.on_key("y")
    assert watcher.path.read_text() == (watcher.exercise.stub_path).read_text()
    watcher.clock.now += 1  # type: ignore[attr-defined]
    assert watcher.tick() is not None  # the restored stub is graded like a save


def test_everything_is_rechecked_before_the_final_message(watcher: Watcher, capsys: pytest.CaptureFixture[str]) -> None:
    """After the last exercise, all are graded again; a pass that broke since brings the learner back."""
    watcher.on_key("n")
    watcher.path.write_text(SOLVED)
    watcher.on_save(watcher.path)
    watcher.clock.now += 1  # type: ignore[attr-defined]
    assert watcher.tick().passed  # type: ignore[union-attr]
    first = watcher.session.submission(watcher.session.exercise("ex_pass"))
    first.write_text("def double(x):\n    return x\n")  # broken, but its stored pass is still there
    watcher.on_key("n")
    assert "checking them all again" in capsys.readouterr().out
    assert not watcher.done and watcher.name == "ex_pass"
    first.write_text(SOLVED)
    watcher.on_save(first)
    watcher.clock.now += 1  # type: ignore[attr-defined]
    watcher.tick()
    watcher.on_key("n")
    assert watcher.done
    assert (watcher.session.course.meta.final or "Every exercise passes.") in capsys.readouterr().out




LOOPING = "def double(x):\n    while True:\n        pass\n"


@pytest.fixture
def looping_course(tmp_path: Path) -> Path:
    """The mini course's first two exercises and its looping one, whose limit is far off (300 s), so
    that only a cancellation can end its grading within a test."""
    root = tmp_path / "course"
    shutil.copytree(MINI, root, ignore=shutil.ignore_patterns(".course", "__pycache__"))
    toml = root / "course.toml"
    toml.write_text(toml.read_text().replace('"ex_syntax", "ex_loop", "ex_exit_import", "ex_os_exit", "ex_no_tests"',
                                             '"ex_syntax", "ex_loop"'))
    meta = root / "exercises/04_ex_loop/exercise.toml"
    meta.write_text(meta.read_text().replace("timeout_s = 8", "timeout_s = 300"))
    git_commit(root)
    return root


def _save(path: Path, text: str) -> None:
    """Save the way many editors do: write a temporary file beside it, then rename it over."""
    tmp = path.with_name(f".{path.name}.swp")
    tmp.write_text(text)
    os.replace(tmp, path)


def test_watch_a_named_exercise_hint_in_place_and_the_progress_line(looping_course: Path) -> None:
    """`course watch 2` in a terminal watches ex_fail (not the current ex_pass); `h` shows the next hint
    in place; `n` while a new version is checked says why it stays; a save during that check cancels
    it and the new file gets its verdict; the progress line is drawn again under it; `q` quits."""
    target = looping_course / "exercises/02_ex_fail/ex_fail.py"
    term = Terminal(["watch", "2"], cwd=looping_course)
    try:
        term.expect("course watch · ex_fail (2 of 4)")
        term.expect("save it to check again")
        term.type("h")
        term.expect("Hint 1 of 3 for ex_fail:")
        term.expect("Press h for the next one.")
        _save(target, LOOPING)
        term.expect("checking ex_fail...")
        _wait_for_a_grading(term)
        term.type("n")
        term.expect("n: ex_fail is being checked; it moves on once that check passes")
        _save(target, SOLVED)
        term.expect("saved again: checking the new version...")
        term.expect("ex_fail passes. Press n for the next exercise.")
        term.expect("1/4 passed · ex_fail · passes · h hint · q quit")
        term.type("q")
        term.expect("Bye.")
        assert term.proc.wait(timeout=60) == 0
    finally:
        term.close()


def _wait_for_a_grading(term: Terminal) -> list[int]:
    """Wait until watch's worker runs a grading; the pids of watch's processes (worker, grading)."""
    import psutil

    deadline = time.monotonic() + 120
    while len(found := psutil.Process(term.proc.pid).children(recursive=True)) < 2:
        assert time.monotonic() < deadline, term.text()[-2000:]
        time.sleep(0.02)
    return [p.pid for p in found]


def _alive(pid: int) -> bool:
    """True while `pid` runs (a zombie has ended)."""
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.mark.parametrize("way", ["q", "ctrl-c"])
def test_q_during_a_check_quits_and_ends_its_processes(looping_course: Path, way: str) -> None:
    """`q` (or Ctrl-C, which says the same) while a grading loops forever ends watch, the grading's process
    group and the worker, long before the grading's own limit could have."""
    import signal

    term = Terminal(["watch", "ex_loop"], cwd=looping_course)
    try:
        term.expect("checking ex_loop...")
        started = _wait_for_a_grading(term)
        if way == "q":
            term.type("q")
        else:
            os.kill(term.proc.pid, signal.SIGINT)  # what the terminal sends on Ctrl-C
        assert ended(term.proc, 120) == 0
        assert "Bye." in term.text() and "ran past" not in term.text() and "interrupted" not in term.text()
        deadline = time.monotonic() + 10
        while any(_alive(pid) for pid in started):
            assert time.monotonic() < deadline, [pid for pid in started if _alive(pid)]
            time.sleep(0.05)
    finally:
        term.close()


def test_watch_without_a_terminal_says_what_to_use(looping_course: Path) -> None:
    """Without a terminal (a notebook's `!course watch`, a pipe) watch does not hang: one sentence
    pointing to `course check` and the notebook's cell magic, and exit 2."""
    env = {k: v for k, v in os.environ.items() if k not in ("COURSE_ROOT", "COURSE_WORKSPACE")}
    done = subprocess.run([sys.executable, "-m", "course", "watch"], cwd=looping_course, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 2
    assert " ".join(done.stderr.split()) == f"error: {NO_TERMINAL}"
    assert "`course check`" in NO_TERMINAL and "`%%course NAME`" in NO_TERMINAL


def test_the_footer_is_redrawn_as_soon_as_a_message_changes_it() -> None:
    """After each save, check and verdict the footer is redrawn at once, so the screen of a verdict
    settles when it is printed, not at the footer's next timed refresh."""
    import queue

    from course.watch_loop import _loop

    seen: list[str] = []

    class Recording:
        """A watcher that notes what it is given and is done after its verdict."""

        done = False

        def on_save(self, path: str) -> None:
            seen.append("save")

        def on_event(self, *event: object) -> None:
            seen.append("check")

        def on_graded(self, *graded: object) -> None:
            seen.append("verdict")
            self.done = True

        def tick(self) -> None:
            pass

        def until_due(self, longest: float) -> float:
            return longest

    events: queue.Queue = queue.Queue()
    for message in (("save", "x.py"), ("check", (1, None)), ("graded", (1, []))):
        events.put(message)
    _loop(Recording(), events, lambda: seen.append("redraw"))  # type: ignore[arg-type]
    assert seen == ["save", "redraw", "check", "redraw", "verdict", "redraw"]
