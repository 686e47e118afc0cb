"""A grading started ahead of its save (`course.engine.wire.gate`): it waits, grades the file as it is when the gate
opens, clocks its wall time from then, and leaves nothing behind when it is called off."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from course.engine.parent.runner import grade, start_worker
from course.engine.parent.verdict import ExerciseResult
from course.engine.wire.gate import Gate
from course.registry import Exercise, load_course

GRADER = '''
import pytest

@pytest.mark.judge
def test_doubles_in_the_judge(submission):
    """double(21) is 42, as the judge sees it."""
    assert submission.double(21) == 42

def test_doubles_in_the_executor(submission):
    """double(0) is 0."""
    assert submission.double(0) == 0
'''
WRONG = "def double(x):\n    return 3 * x + 1\n"
RIGHT = "def double(x):\n    return 2 * x\n"


def _exercise(root: Path, wall_s: float) -> Exercise:
    """A course of one exercise graded in two processes (a judge's check and an executor's)."""
    root.mkdir()
    (root / "course.toml").write_text('format_version = 1\ntitle = "Gate"\nexercises = ["double"]\n')
    for top in ("exercises", "graders", "solutions"):
        (root / top / "01_double").mkdir(parents=True)
    (root / "exercises/01_double/exercise.toml").write_text(
        f'title = "double"\ntopic = "gate"\nhints = ["h"]\ntimeout_s = 30\nwall_timeout_s = {wall_s}\n')
    (root / "exercises/01_double/double.py").write_text("def double(x):\n    raise NotImplementedError\n")
    (root / "graders/01_double/test_double.py").write_text(GRADER)
    return load_course(root).exercises[0]


def _at_the_gate(processes: Callable[[], list[psutil.Process]]) -> list[psutil.Process]:
    """Wait until the grading's two processes exist and have used no CPU for half a second: they wait."""
    deadline, last, still_since = time.monotonic() + 120, -1.0, time.monotonic()
    while True:
        found = processes()
        try:
            used = sum(sum(p.cpu_times()[:2]) for p in found)
        except psutil.NoSuchProcess:
            used = -1.0
        if len(found) < 2 or used != last:
            last, still_since = used, time.monotonic()
        elif time.monotonic() - still_since > 0.5:
            return found
        assert time.monotonic() < deadline, "the grading never came to rest at its gate"
        time.sleep(0.05)


def _in_thread(run: Callable[[], ExerciseResult]) -> tuple[threading.Thread, dict[str, ExerciseResult]]:
    """Start `run` on a thread; its result lands in the dict under "result"."""
    out: dict[str, ExerciseResult] = {}
    thread = threading.Thread(target=lambda: out.setdefault("result", run()), daemon=True)
    thread.start()
    return thread, out


def test_a_gated_grading_reads_the_file_when_opened_and_clocks_its_wall_from_then(tmp_path: Path) -> None:
    """Started on a wrong file and held past its wall-clock limit, a grading opened after the file was fixed
    passes: nothing of the learner's was read before the gate opened, and the wait cost none of its time."""
    wall_s = 4.0
    exercise = _exercise(tmp_path / "course", wall_s)
    learner = tmp_path / "double.py"
    learner.write_text(WRONG)
    worker = start_worker()
    assert worker is not None and worker.ready()
    gate = Gate()
    try:
        thread, out = _in_thread(lambda: grade(exercise, learner, worker=worker, skip_stub=False, gate=gate))
        _at_the_gate(lambda: psutil.Process(worker.pid).children())
        time.sleep(wall_s + 0.5)
        assert thread.is_alive() and not out, "the grading ran before its gate opened"
        learner.write_text(RIGHT)
        gate.open()
        thread.join(120)
    finally:
        worker.close()
    result = out["result"]
    assert result.passed, [(c.id, c.status, c.message) for c in result.checks]
    assert [c.id for c in result.checks] == ["test_doubles_in_the_judge", "test_doubles_in_the_executor"]


def test_a_gated_grading_called_off_ends_without_a_verdict_or_a_process(tmp_path: Path) -> None:
    """Cancelled while it waits (cold, without a worker), a grading gives no verdict and its processes end."""
    exercise = _exercise(tmp_path / "course", 60)
    learner = tmp_path / "double.py"
    learner.write_text(RIGHT)
    cancel = threading.Event()
    me = psutil.Process()
    thread, out = _in_thread(lambda: grade(exercise, learner, skip_stub=False, gate=Gate(), cancel=cancel))
    waiting = _at_the_gate(lambda: me.children(recursive=True))
    cancel.set()
    thread.join(120)
    assert out["result"].status == "cancelled"
    gone, alive = psutil.wait_procs(waiting, timeout=10)
    assert not alive, f"still running after the grading was called off: {[p.pid for p in alive]}"


@pytest.mark.parametrize("opened", [True, False])
def test_a_process_waits_for_go_and_warms_on_the_way(opened: bool) -> None:
    """The child's side of the protocol: WARM runs the warm-up, GO lets it go on, a closed pipe calls it off."""
    import os

    from course.engine.wire import gate as gates

    gate = Gate()
    read, write = gates.go_pipe(gate)
    warmed: list[int] = []
    gates.release(write, opened)
    assert gates.await_go(read, warm=lambda: warmed.append(1)) is opened
    assert warmed == [1]
    read, write = gates.go_pipe(None)
    assert write is None and gates.await_go(read) is True
    with pytest.raises(OSError):
        os.fstat(read)  # closed once read


def test_an_exercise_of_several_processes_waits_for_its_gate_then_grades_as_any(tmp_path: Path) -> None:
    """Several processes are not started ahead: the grading waits for its gate before anything, gives no verdict
    if called off meanwhile, and once let go checks the file as it is then (one that does not compile is said so
    at once, without a process)."""
    course = load_course(Path(__file__).parents[1] / "fixtures" / "multi_course")
    exercise = course.exercises[0]
    assert exercise.meta.processes > 1
    cancel = threading.Event()
    thread, out = _in_thread(lambda: grade(exercise, exercise.stub_path, gate=Gate(), cancel=cancel))
    time.sleep(0.3)
    assert thread.is_alive() and not out and psutil.Process().children() == []
    cancel.set()
    thread.join(60)
    assert out["result"].status == "cancelled"
    learner = tmp_path / exercise.stub_path.name
    learner.write_text("def total(:\n")
    gate = Gate()
    gate.open()
    result = grade(exercise, learner, gate=gate)
    assert result.status == "failed" and all("SyntaxError" in c.message for c in result.checks), result.checks
