"""Limits that a busy machine cannot trip: CPU time of the whole process tree, a wall-clock cap for waits,
each check's share of the output, and where the learner's code was when a run was stopped.

Nothing here is timed: each run either burns CPU time (counted as CPU time, however slow the
machine) or waits without burning any, under a limit it cannot reach the other way.
"""

from __future__ import annotations

import io
import sys
import textwrap
from pathlib import Path
from typing import Any

from course.engine.contain import limits
from course.engine.contain.limits import Budget
from course.engine.parent import isolation
from course.engine.parent.output import CHECK_OUTPUT_KEEP, OutputSink

FOREVER = 3600.0


def _run(code: str, budget: Budget, tmp_path: Path) -> isolation.Outcome:
    """Run a Python snippet under `budget`, isolated as a grading is."""
    return isolation.run_isolated([sys.executable, "-c", textwrap.dedent(code)], key=b"k", cwd=tmp_path,
                                  env={"PATH": "/usr/bin:/bin"}, timeout_s=budget.cpu_s, wall_s=budget.wall_s,
                                  memory_mb=4096)


def test_an_endless_loop_is_stopped_by_its_cpu_time(tmp_path: Path) -> None:
    """A loop burns its CPU limit long before the clock's cap could matter."""
    outcome = _run("while True:\n    pass\n", Budget(cpu_s=0.5, wall_s=FOREVER), tmp_path)
    assert outcome.timed_out and outcome.limit == "cpu"


def test_a_wait_is_stopped_by_the_clock(tmp_path: Path) -> None:
    """A sleep burns no CPU time: only the wall-clock cap ends it."""
    outcome = _run("import time\ntime.sleep(3600)\n", Budget(cpu_s=FOREVER, wall_s=0.5), tmp_path)
    assert outcome.timed_out and outcome.limit == "wall"


def test_cpu_time_counts_the_whole_tree_and_the_children_it_reaped(tmp_path: Path) -> None:
    """Two children, one after the other, each burn 0.5 s of CPU time, then the parent sleeps: neither
    child alone reaches the 0.8 s limit, the tree does (the first one counted once reaped)."""
    code = """
        import subprocess, sys, time
        burn = "import time\\nwhile time.process_time() < 0.5:\\n    pass\\n"
        for _ in range(2):
            subprocess.run([sys.executable, "-c", burn], check=True)
        time.sleep(3600)
    """
    outcome = _run(code, Budget(cpu_s=0.8, wall_s=FOREVER), tmp_path)
    assert outcome.timed_out and outcome.limit == "cpu"


def test_the_wall_cap_is_a_documented_multiple_unless_the_exercise_sets_it() -> None:
    """`timeout_s` is CPU time; the cap is WALL_FACTOR times it, or `wall_timeout_s` when given."""
    from course.registry import ExerciseMeta

    assert limits.budget(ExerciseMeta("t", "x", timeout_s=60)).wall_s == 60 * limits.WALL_FACTOR
    assert limits.WALL_FACTOR == 5
    assert limits.budget(ExerciseMeta("t", "x", timeout_s=3, wall_timeout_s=120)).wall_s == 120


def test_a_check_has_a_cpu_limit_of_its_own_unless_it_would_be_the_whole() -> None:
    """One check may use a share of the grading's CPU time (at least a floor that covers JAX's import), or
    `check_timeout_s` when given; a share as large as the whole is no limit of its own (0)."""
    from course.registry import ExerciseMeta

    assert limits.budget(ExerciseMeta("t", "x", timeout_s=90)).check_cpu_s == 90 / limits.CHECK_SHARE
    assert limits.budget(ExerciseMeta("t", "x", timeout_s=30)).check_cpu_s == limits.CHECK_FLOOR_S
    assert limits.budget(ExerciseMeta("t", "x", timeout_s=60, check_timeout_s=5)).check_cpu_s == 5
    assert limits.budget(ExerciseMeta("t", "x", timeout_s=3)).check_cpu_s == 0


DUMP = """main thread 0x7f0000000001
Thread 0x00007f0000000002 (most recent call first):
  File "/sub/mine.py", line 9 in helper
  File "/usr/lib/python3.11/threading.py", line 982 in run

Current thread 0x00007f0000000001 (most recent call first):
  File "/usr/lib/python3.11/json/decoder.py", line 353 in raw_decode
  File "/sub/mine.py", line 4 in inner
  File "/sub/mine.py", line 7 in outer
  File "/grader/test_x.py", line 12 in test_x
"""


def test_the_learners_frames_come_from_the_main_thread_outermost_first() -> None:
    """Only the learner's own file's frames, the main thread's first, with each line's text."""
    source = "\n".join(f"line {n}" for n in range(1, 12))
    frames = limits.learner_frames(DUMP, Path("/sub/mine.py"), source)
    assert [str(f) for f in frames] == ["mine.py line 7, in outer: `line 7`", "mine.py line 4, in inner: `line 4`"]
    assert limits.learner_frames(DUMP, Path("/elsewhere/mine.py")) == []
    assert limits.learner_frames("", Path("/sub/mine.py")) == []


def test_of_several_dumps_the_last_one_counts() -> None:
    """A run that was asked twice (or asked itself) wrote two dumps: the later one is where it was."""
    later = 'Current thread 0x00007f0000000001 (most recent call first):\n  File "/sub/mine.py", line 2 in f\n'
    frames = limits.learner_frames(DUMP + later, Path("/sub/mine.py"))
    assert [(f.line, f.function) for f in frames] == [(2, "f")]


def test_the_messages_say_which_limit_and_where() -> None:
    """CPU time and the clock each have their own words; the innermost frame is named in the first line."""
    frames = [limits.Frame("mine.py", 7, "outer", "x = f()"), limits.Frame("mine.py", 4, "inner", "while True:")]
    cpu = limits.reason("cpu", Budget(60, 300), frames)
    assert cpu.splitlines()[0] == ("your code used 60 s of CPU time, this exercise's limit, and was stopped at "
                                   "mine.py line 4, in inner; is there a loop that never ends?")
    assert cpu.splitlines()[1:] == ["where your code was (most recent call last):",
                                    "  mine.py line 7, in outer: `x = f()`",
                                    "  mine.py line 4, in inner: `while True:`"]
    wall = limits.reason("wall", Budget(60, 300), [])
    assert wall.startswith("your code waited 300 s of wall-clock time without finishing and was stopped; ")


class Trickle(io.RawIOBase):
    """A stream that hands out its bytes a few at a time, as a pipe may."""

    def __init__(self, data: bytes, step: int) -> None:
        self.data, self.step = data, step

    def read1(self, n: int = -1) -> bytes:
        chunk, self.data = self.data[: self.step], self.data[self.step:]
        return chunk


def test_each_checks_output_is_cut_at_the_marks_however_the_pipe_splits_it() -> None:
    """Marks split across reads still split the output; a check's share is cut to its head and tail."""
    mark = b"\x1eabc:"
    loud = b"x" * (3 * CHECK_OUTPUT_KEEP)
    data = b"start\n" + mark + b"0\x1e" + b"one\n" + mark + b"1\x1e" + loud + mark + b"2\x1e" + b"end\n"
    for step in (1, 3, 7, 65536):
        sink = OutputSink(Trickle(data, step), mark)
        sink.join()
        checks = sink.checks()
        assert checks[0] == "one\n" and set(checks) == {0, 1, 2}
        assert len(checks[1]) < CHECK_OUTPUT_KEEP + 100 and f"[... {len(loud) - CHECK_OUTPUT_KEEP} bytes" in checks[1]
        assert sink.text() == "start\none\n" + loud.decode() + "end\n"


def test_ctrl_c_just_after_the_start_ends_the_process_it_started(tmp_path: Path, monkeypatch: Any) -> None:
    """Ctrl-C that lands between the start of a grading and the wait for it (a busy machine makes that moment
    long: the worker's fork, a walk of the process table) still ends the process: nothing is left looping,
    for the caller to wait out its limits."""
    import psutil
    import pytest

    from course.engine.contain import system

    def interrupted(pid: int, memory_mb: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(system, "cap_memory", interrupted)
    started: list[int] = []
    real_start = isolation._start_cold

    def start(*args: Any, **kwargs: Any) -> Any:
        proc = real_start(*args, **kwargs)
        started.append(proc.pid)
        return proc

    monkeypatch.setattr(isolation, "_start_cold", start)
    with pytest.raises(KeyboardInterrupt):
        _run("while True:\n    pass\n", Budget(cpu_s=FOREVER, wall_s=FOREVER), tmp_path)
    assert started and not psutil.pid_exists(started[0])
