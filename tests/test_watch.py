"""`course watch`: a save gives a verdict, keys do what they say, and it never moves on by itself."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import shutil
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from course.engine.runner import start_worker
from course.engine.worker import Worker
from course.progress import ProgressStore
from course.session import Session, init_workspace
from course.watch import Watcher

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
        clock.now += 0.03  # type: ignore[attr-defined]
        assert watcher.tick() is None
    clock.now += 0.1  # type: ignore[attr-defined]
    assert watcher.tick() is not None
    assert watcher.tick() is None
    assert watcher.n_graded == graded + 1


def test_other_files_are_ignored(watcher: Watcher) -> None:
    """A change to any other file (an editor's temp file, another exercise) grades nothing."""
    assert not watcher.on_save(watcher.path.with_name("4913"))
    assert not watcher.on_save(watcher.path.parent.parent / "02_ex_fail" / "ex_fail.py")
    watcher.clock.now += 1  # type: ignore[attr-defined]
    assert watcher.tick() is None


def test_no_auto_advance_and_n_only_once_passed(watcher: Watcher, capsys: pytest.CaptureFixture[str]) -> None:
    """A pass never moves on by itself; `n` on a failing exercise stays and says why."""
    watcher.on_save(watcher.path)
    watcher.clock.now += 1  # type: ignore[attr-defined]
    assert watcher.tick() is not None and watcher.name == "ex_pass"
    watcher.on_key("n")
    assert watcher.name == "ex_fail"
    capsys.readouterr()
    watcher.on_key("n")
    assert watcher.name == "ex_fail"
    assert "does not pass yet" in capsys.readouterr().out


def test_keys_pressed_while_grading_are_ignored(watcher: Watcher) -> None:
    """A key read before the last grading ended, or during one, does nothing."""
    watcher.on_key("q", at=watcher.clock() - 1)
    assert not watcher.done
    watcher.busy = True
    watcher.on_key("q")
    assert not watcher.done
    watcher.busy = False
    watcher.on_key("q", at=watcher.clock())
    assert watcher.done


def test_hint_and_list_keys(watcher: Watcher, capsys: pytest.CaptureFixture[str]) -> None:
    """`h` shows the next hint level; `l` shows the exercise table."""
    capsys.readouterr()
    watcher.on_key("h")
    watcher.on_key("h")
    out = capsys.readouterr().out
    assert "Hint 1 of 3 for ex_pass" in out and "Hint 2 of 3 for ex_pass" in out
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


def test_real_loop_in_a_terminal(state: Session) -> None:
    """`course watch` in a pseudo-terminal: verdict, a save is re-graded from file events, `q` quits."""
    workspace = state.workspace
    main, sub = pty.openpty()
    # A wide terminal: the markers looked for below must not be wrapped apart.
    fcntl.ioctl(sub, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 250, 0, 0))
    env = {**os.environ, "COURSE_ROOT": str(state.course.root)}
    env.pop("COLUMNS", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "course", "watch", "--workspace", str(workspace)],
        stdin=sub,
        stdout=sub,
        stderr=sub,
        env=env,
        start_new_session=True,
    )
    os.close(sub)
    try:
        _read_until(main, b"Press n for the next exercise")
        os.write(main, b"n")
        _read_until(main, b"save it to check again")
        target = state.submission(state.exercise("ex_fail"))
        tmp = target.with_name(".ex_fail.py.swp")
        tmp.write_text(SOLVED)
        os.replace(tmp, target)  # the way many editors save
        _read_until(main, b"ex_fail passes")
        os.write(main, b"q")
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(main)


def _read_until(fd: int, marker: bytes, timeout_s: float = 120) -> bytes:
    """Read the terminal until `marker` shows up."""
    seen = b""
    deadline = time.monotonic() + timeout_s
    while marker not in seen:
        assert time.monotonic() < deadline, seen.decode(errors="replace")[-2000:]
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            seen += os.read(fd, 65536)
    return seen
