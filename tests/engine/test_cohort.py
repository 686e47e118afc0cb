"""Gradings in several processes (`processes = 2`): they join, pass together, and a hang or a crash is named.

The fixture course `multi_course` has three exercises with one grader: `mp_pass` adds every
process's value with one all-reduce, `mp_hang` adds only on process 0 (process 1 never enters the
all-reduce), `mp_crash` ends process 1 before it. Each is graded cold and warm, sandboxed and not;
the gradings run at once, so the hangs' waits overlap.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from course.engine.contain import protections, sandbox
from course.engine.parent import cohort, lockstep, runner, tree
from course.engine.parent.verdict import CheckResult, ExerciseResult
from course.registry import Exercise, load_course
from support import FIXTURES

COURSE = load_course(FIXTURES / "multi_course")
NAMESPACES = protections.available().network_namespace
CASES = [("mp_pass", "cold", False), ("mp_pass", "warm", True), ("mp_hang", "warm", False),
         ("mp_hang", "cold", True), ("mp_crash", "cold", False), ("mp_crash", "warm", True)]
ESCAPE = """

import contextlib
import socket


def total(value):
    '''Try to reach the host's loopback and a file outside the sandbox; add only if neither works.'''
    reached = []
    try:
        socket.create_connection(("127.0.0.1", {port}), timeout=2).close()
        reached.append("the host's loopback")
    except OSError:
        pass
    try:
        open({secret!r}).read()
        reached.append("a classmate's file")
    except OSError:
        pass
    return -1.0 if reached else _sum(value)
"""


def _accept_one(listener: socket.socket) -> None:
    """Accept one connection, if any comes before the listener is closed."""
    with contextlib.suppress(OSError):
        listener.accept()


def _exercise(name: str) -> Exercise:
    """The fixture exercise called `name`."""
    return next(e for e in COURSE.exercises if e.name == name)


@pytest.fixture(scope="module")
def graded() -> dict[tuple[str, str, bool], ExerciseResult]:
    """Every case graded, all at once (a hang waits 10 s without burning CPU)."""
    worker = runner.start_worker()
    confinement = protections.confinement()

    def one(case: tuple[str, str, bool]) -> ExerciseResult:
        """Grade one fixture solution as the case says."""
        name, start, confined = case
        exercise = _exercise(name)
        return runner.grade(exercise, exercise.solution_path, skip_stub=False,
                            worker=worker if start == "warm" else None,
                            sandbox=confinement if confined else None)

    try:
        return dict(zip(CASES, runner.map_jobs(one, CASES, len(CASES)), strict=True))
    finally:
        if worker is not None:
            worker.close()


@pytest.mark.parametrize("case", [c for c in CASES if c[0] == "mp_pass"], ids=str)
def test_two_processes_pass_together(graded: dict, case: tuple) -> None:
    """The 2-process solution passes every check, each check having passed in both processes."""
    result = graded[case]
    assert result.status == "passed", result.message
    assert [c.status for c in result.checks] == ["passed"] * 3 and result.score == 3


@pytest.mark.parametrize("case", [c for c in CASES if c[0] == "mp_hang"], ids=str)
def test_a_hang_is_named_with_where_each_process_was(graded: dict, case: tuple) -> None:
    """Process 0 waits in an all-reduce process 1 skipped: the check it was in fails, naming both places."""
    result = graded[case]
    statuses = [c.status for c in result.checks]
    assert statuses == ["passed", "failed", "not_run"], result.message
    message = result.checks[1].message
    assert message.startswith("process 0: the 2 processes stopped making progress for 10 s")
    assert 'process 0 in "total", process 1 finished' in message
    assert "mp_hang.py line 18, in total: `return _sum(value)`" in message


@pytest.mark.parametrize("case", [c for c in CASES if c[0] == "mp_crash"], ids=str)
def test_a_crashed_process_is_named_and_the_other_is_stopped(graded: dict, case: tuple) -> None:
    """Process 1 ends itself: the check fails saying so, and process 0, left waiting, is stopped."""
    result = graded[case]
    assert [c.status for c in result.checks] == ["passed", "failed", "not_run"], result.message
    assert 'process 1 ended (exit code 3) in "total"' in result.checks[1].message
    # Stopped by the watch: a cap (CPU seconds, or the wall-clock cap) would end it as a timeout. No bound on
    # its duration, which a busy machine stretches (70 s seen at a load of 48).
    assert result.status == "failed", result.message


@pytest.mark.skipif(not NAMESPACES, reason="this machine gives no user and network namespace")
def test_sandboxed_processes_reach_each_other_and_nothing_else(tmp_path: Path) -> None:
    """Sandboxed, the two processes talk over their private loopback, but reach neither the host's
    loopback nor a file outside the policy."""
    secret = tmp_path / "secret.txt"
    secret.write_text("a classmate's work", encoding="utf-8")
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        threading.Thread(target=_accept_one, args=(listener,), daemon=True).start()
        folder = tmp_path / "submission"
        folder.mkdir()
        own = _exercise("mp_pass").solution_path.read_text(encoding="utf-8")  # its `_sum`, then a new `total`
        (folder / "mp_pass.py").write_text(own + ESCAPE.format(port=listener.getsockname()[1], secret=str(secret)))
        result = runner.grade(_exercise("mp_pass"), folder / "mp_pass.py", sandbox=protections.confinement())
    assert result.status == "passed", [c.message for c in result.checks]


LOOPS = """import jax


def total(value):
    '''Never returns, in every process.'''
    while True: pass  # noqa: E701
"""


def test_a_loop_in_every_process_is_stopped_at_its_checks_own_cpu_limit(tmp_path: Path) -> None:
    """Each process of a cohort holds its checks to `check_timeout_s`, as one grading does: an endless loop is
    named at that limit, in the check it was in, not at the grading's whole CPU limit or its wall-clock cap."""
    import shutil

    root = tmp_path / "course"
    shutil.copytree(FIXTURES / "multi_course", root, ignore=shutil.ignore_patterns("__pycache__"))
    meta = root / "exercises/01_mp_pass/exercise.toml"
    meta.write_text(meta.read_text().replace("timeout_s = 20", "timeout_s = 600\ncheck_timeout_s = 2")
                    .replace("wall_timeout_s = 60", "wall_timeout_s = 120"))
    exercise = next(e for e in load_course(root).exercises if e.name == "mp_pass")
    (tmp_path / "mp_pass.py").write_text(LOOPS)
    result = runner.grade(exercise, tmp_path / "mp_pass.py", skip_stub=False)
    assert result.status == "timeout" and [c.status for c in result.checks] == ["passed", "failed", "not_run"]
    stopped = result.checks[1].message
    assert "used 2 s of CPU time in this check, the limit of one check" in stopped, stopped
    assert "mp_pass.py line 6, in total: `while True: pass" in stopped


FORGER = r'''

def total(value):
    """Claims on every descriptor that this process finished and passed, then gives a wrong total."""
    import os

    lies = b'{"step": "finished", "finished": true}\n{"id": "test_total", "title": "t", "status": "passed"}\n'
    for fd in range(3, 256):
        try:
            os.write(fd, lies)
        except OSError:
            pass
    return -1.0
'''


def test_forged_steps_and_events_never_make_a_verdict(tmp_path: Path) -> None:
    """A file that tells the parent, on every descriptor, that it finished and passed still fails:
    the watch only ends processes early, and a verdict comes only from each process's signed report."""
    own = _exercise("mp_pass").solution_path.read_text(encoding="utf-8")
    (tmp_path / "mp_pass.py").write_text(own + FORGER, encoding="utf-8")
    result = runner.grade(_exercise("mp_pass"), tmp_path / "mp_pass.py")
    assert result.status != "passed" and result.score < result.max_score
    assert result.checks[1].status != "passed"


def test_merge_keeps_a_tampered_process_tampered() -> None:
    """One process whose machinery was tampered with makes the whole verdict so, saying which process."""
    honest = ExerciseResult("ex", "passed", checks=[CheckResult("test_a", "a", "passed", 1, 1)], message="ok")
    forged = ExerciseResult("ex", "failed", checks=[CheckResult("test_a", "a", "failed", 0, 1, "tampered")],
                            message="the grading machinery was tampered with", tampered=True)
    merged = cohort.merge("ex", [honest, forged])
    assert merged.tampered and merged.status == "failed" and merged.score == 0
    assert merged.message.startswith("process 1: the grading machinery was tampered with")


def _watch(count: int = 2) -> lockstep.Watch:
    """A watch whose processes burn no CPU, so only their steps say they move."""
    return lockstep.Watch(count)


def test_the_watch_ends_the_cohort_once_every_process_has_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    """FINISHED only when each process has either said it finished or ended."""
    monkeypatch.setattr(lockstep.system, "tree_cpu_s", lambda pid: 0.0)
    watch = _watch()
    watch.event(0, {"step": "finished", "finished": True})
    assert watch(0, 1) == ""
    watch.end(1, 0)
    assert watch(0, 1) == tree.FINISHED


def test_the_watch_tells_a_hang_from_slow_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Different steps and no progress for HANG_S is a hang; the same step, or CPU burning, is not."""
    cpu = {"burnt": 0.0}
    monkeypatch.setattr(lockstep.system, "tree_cpu_s", lambda pid: cpu["burnt"])
    monkeypatch.setattr(lockstep, "HANG_S", 0.3)
    monkeypatch.setattr(lockstep, "SAMPLE_S", 0.05)
    same = _watch()
    for i in (0, 1):
        same.event(i, {"step": "global mean"})
    time.sleep(0.4)
    assert same(0, 1) == ""  # both in one step: slow, perhaps, but not waiting on each other
    moving = _watch()
    moving.event(0, {"step": "a"})
    moving.event(1, {"step": "b"})
    for _ in range(8):
        cpu["burnt"] += 1.0
        time.sleep(0.06)
        assert moving(1, 1) == ""  # process 1 is computing
    time.sleep(0.4)
    said = moving(0, 1)
    assert 'process 0 in "a", process 1 in "b"' in said
    assert moving(1, 1) == said  # every process is stopped for the same reason


def test_merge_passes_a_check_only_where_every_process_passed() -> None:
    """A check failed in one process fails the cohort, saying which process; the score counts the rest."""
    def result(status: str, message: str = "") -> ExerciseResult:
        checks = [CheckResult("test_a", "a", "passed", 1, 1), CheckResult("test_b", "b", status,
                                                                           2 if status == "passed" else 0, 2, message)]
        return ExerciseResult("ex", "passed" if status == "passed" else "failed", checks=checks,
                              message="1 of 2 checks passed")

    merged = cohort.merge("ex", [result("passed"), result("failed", "wrong rows")])
    assert merged.status == "failed" and merged.score == 1 and merged.max_score == 3
    assert merged.checks[1].message == "process 1: wrong rows"
    assert cohort.merge("ex", [result("passed"), result("passed")]).status == "passed"


def test_a_loopback_that_cannot_be_made_is_the_machines_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """When the private loopback cannot be made, the grading is an error of the platform, not a verdict."""
    @contextlib.contextmanager
    def refused(confinement: object) -> Iterator[int]:
        raise sandbox.SandboxError("the private loopback for the grading processes could not be made")
        yield 0

    monkeypatch.setattr(cohort, "_private_loopback", refused)
    exercise = _exercise("mp_pass")
    result = runner.grade(exercise, exercise.solution_path, skip_stub=False, sandbox=protections.confinement())
    assert result.status == "error" and "not the submitted code" in result.message


def test_a_check_is_shown_once_every_process_has_ended_it_whatever_their_start_events() -> None:
    """Each process says when a check starts and when it ends: the cohort forwards the check once, when
    every process has ended it, the worst verdict of them (a start is no verdict to merge)."""
    forwarded: list[dict] = []
    watch = lockstep.Watch(2, forwarded.append)
    for index in (0, 1):
        watch.event(index, {"id": "test_a", "title": "A", "status": "running"})
    watch.event(0, {"id": "test_a", "title": "A", "status": "passed"})
    assert forwarded == []
    watch.event(1, {"id": "test_a", "title": "A", "status": "failed"})
    assert [e["status"] for e in forwarded] == ["failed"]
