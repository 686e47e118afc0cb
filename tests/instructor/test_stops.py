"""Stopping `course grade` never costs a student points: a grading the stop ended is no verdict.

A class is stopped many times at random moments, by each signal a platform stops a job with
(SIGTERM from a scheduler or `docker stop`, SIGINT from Ctrl-C, SIGHUP from a closed terminal),
then rerun to the end: its gradebook must be the one an uninterrupted run writes, byte for byte.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from class_helpers import SOLUTION, WRONG, class_course, write_folder
from course.errors import Stopped, exit_code_for

COURSE_BIN = Path(sys.executable).with_name("course")
SLOW = "import time\ntime.sleep(1.0)\n"
"""Each file sleeps as it is imported, so a stop often finds gradings in flight."""
STOPS = 6


def _class(root: Path) -> tuple[Path, Path]:
    """A course and six students, each exercise passed by some and failed by others."""
    course, subs = class_course(root), root / "subs"
    for k in range(6):
        write_folder(subs / f"s{k}", {"ex_pass.py": SLOW + (SOLUTION if k % 2 == 0 else WRONG),
                                      "ex_fail.py": SLOW + (WRONG if k % 3 else SOLUTION)})
    return course, subs


def _argv(course: Path, subs: Path, out: Path) -> list[str]:
    """`course grade` of the class into `out`, with the course's own seed (no `--seed`)."""
    return [str(COURSE_BIN), "grade", str(subs), "--out", str(out), "--course", str(course), "--jobs", "2", "--json",
            "--trust-submissions"]


def _env(scratch: Path) -> dict[str, str]:
    """The environment of a run whose scratch folders land in `scratch`, where the test can see them."""
    return {**{k: v for k, v in os.environ.items() if not k.startswith("COURSE_")}, "TMPDIR": str(scratch)}


def _stop_once(argv: list[str], scratch: Path, delay: float, signum: int, whole_tree: bool) -> int:
    """Start the run, wait until it grades a student (a private copy of their file exists: the
    reference solutions, graded first, are not the students'), wait `delay`, send `signum` to it,
    or (`whole_tree`) to it and every process it started at once, as Slurm and systemd stop a job."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_env(scratch), text=True)
    deadline = time.monotonic() + 120
    while not list(scratch.glob("course-class-*/*/ex_*.py")) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(delay)
    if proc.poll() is None:
        tree = psutil.Process(proc.pid).children(recursive=True) if whole_tree else []
        for each in [*tree, psutil.Process(proc.pid)]:
            with contextlib.suppress(psutil.NoSuchProcess):
                each.send_signal(signum)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode in (0, 128 + signum), (proc.returncode, err)
    assert not list(scratch.iterdir()), list(scratch.iterdir())  # every scratch folder removed
    return proc.returncode


@pytest.mark.slow
def test_a_class_stopped_at_random_moments_ends_with_an_uninterrupted_runs_gradebook(tmp_path: Path) -> None:
    """Six stops at seeded random moments, by SIGTERM, SIGINT and SIGHUP in turn, every other one sent
    to each grading process too (the platform's signal may reach a grading first), then a rerun:
    the gradebook equals an uninterrupted run's byte for byte, and no results file ever holds a
    grading the stop ended ("killed by ...")."""
    course, subs = _class(tmp_path)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    whole = subprocess.run(_argv(course, subs, tmp_path / "whole"), capture_output=True, text=True, timeout=300,
                           env=_env(scratch), check=False)
    assert whole.returncode == 0, whole.stderr
    stopped_out = tmp_path / "stopped"
    draw = random.Random(27)
    signals = [signal.SIGTERM, signal.SIGINT, signal.SIGHUP]
    codes = []
    for k in range(STOPS):
        codes.append(_stop_once(_argv(course, subs, stopped_out), scratch, draw.uniform(0.0, 2.0), signals[k % 3],
                                whole_tree=k % 2 == 1))
        for path in stopped_out.glob("*/results.json"):
            text = path.read_text(encoding="utf-8")
            assert "killed by" not in text and "cancelled" not in text, text
            json.loads(text)
    assert sum(code != 0 for code in codes) >= STOPS // 2, codes  # most runs were really stopped mid-way
    final = subprocess.run(_argv(course, subs, stopped_out), capture_output=True, text=True, timeout=300,
                           env=_env(scratch), check=False)
    assert final.returncode == 0, final.stderr
    expected = (tmp_path / "whole" / "gradebook.csv").read_bytes()
    assert (stopped_out / "gradebook.csv").read_bytes() == expected
    assert json.loads(final.stdout)["totals"] == json.loads(whole.stdout)["totals"]


def test_each_stopping_signal_exits_as_a_shell_reports_it() -> None:
    """SIGTERM exits 143, SIGHUP 129, Ctrl-C 130: a scheduler tells a stop from a failure by it."""
    assert exit_code_for(Stopped(signal.SIGTERM)) == 143
    assert exit_code_for(Stopped(signal.SIGHUP)) == 129
    assert exit_code_for(Stopped(signal.SIGINT)) == 130
    assert exit_code_for(KeyboardInterrupt()) == 130


def test_a_grading_dead_of_a_stopping_signal_is_no_verdict_only_when_the_run_stops(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A grading ended by SIGTERM, SIGINT, SIGHUP or SIGKILL belongs to the run's stop when the stop comes
    (it may reach the grading first); without a stop it is the learner's own doing and graded; a grading
    stopped at its time limit or dead of another signal is always graded."""
    import threading

    from course.engine.parent.verdict import ExerciseResult
    from course.instructor import grade

    monkeypatch.setattr(grade, "STOP_GRACE_S", 0.05)
    stopped, running = threading.Event(), threading.Event()
    stopped.set()
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGKILL):
        assert grade._stopped_from_outside(ExerciseResult("ex", "failed", ended_by=signum), stopped)
        assert not grade._stopped_from_outside(ExerciseResult("ex", "failed", ended_by=signum), running)
    assert not grade._stopped_from_outside(ExerciseResult("ex", "timeout", ended_by=signal.SIGKILL), stopped)
    assert not grade._stopped_from_outside(ExerciseResult("ex", "failed", ended_by=signal.SIGSEGV), stopped)
    assert not grade._stopped_from_outside(ExerciseResult("ex", "passed"), stopped)
