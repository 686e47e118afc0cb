"""The runner on the mini-course: one outcome per exercise, verdicts only from signed reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from course import signing
from course.engine.parent.isolation import Outcome
from course.engine.parent.runner import grade, grade_many
from course.engine.parent.verdict import verdict
from course.engine.wire import report
from course.registry import load_course
from support import default_sigint, ended


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Grade every mini-course exercise once, two at a time."""
    import shutil

    from support import FIXTURES

    root = tmp_path_factory.mktemp("runner") / "mini"
    shutil.copytree(FIXTURES / "mini_course", root)
    course = load_course(root)
    pairs = [(e, root / e.stub_rel) for e in course.exercises]
    return {r.name: r for r in grade_many(pairs, jobs=2, seed=7)}


def test_pass(results: dict) -> None:
    """A correct file passes every check with full points."""
    r = results["ex_pass"]
    assert r.status == "passed" and r.score == r.max_score == 3
    assert [c.title for c in r.checks] == ["double returns twice its input.", "double(0) is 0."]


def test_fail_names_the_rule(results: dict) -> None:
    """A wrong value fails with the grader's message."""
    r = results["ex_fail"]
    assert r.status == "failed" and r.score == 0
    assert "should be" in r.checks[0].message


def test_syntax_error_fails_every_check(results: dict) -> None:
    """A syntax error fails every check with the learner's line."""
    r = results["ex_syntax"]
    assert r.status == "failed"
    assert all("syntax error" in c.message and "line 1" in c.message for c in r.checks)


def test_a_file_that_does_not_compile_is_answered_without_a_grading(mini_course: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A syntax error is known from compile() in the parent: the answer comes with no grading process, and
    it is the verdict the grading would give, field for field (every check failed, the caret in each)."""
    from course.engine.parent import isolation, syntax

    exercise = load_course(mini_course).get("ex_syntax")
    path = mini_course / exercise.stub_rel
    with monkeypatch.context() as patched:
        patched.setattr(syntax, "result", lambda *args, **kwargs: None)
        graded = grade(exercise, path, seed=3, skip_stub=False)

    def no_grading(*args: object, **kwargs: object) -> None:
        raise AssertionError("a grading process was started for a file that does not compile")

    monkeypatch.setattr(isolation, "run_isolated", no_grading)
    early = grade(exercise, path, seed=3, skip_stub=False)
    assert {**early.to_json(), "duration_s": 0} == {**graded.to_json(), "duration_s": 0}
    assert early.checks and all("def double(x)\n" in c.message and "^" in c.message for c in early.checks)


def test_a_file_nested_too_deeply_to_compile_is_the_learners_failure(mini_course: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A file whose nesting exhausts Python's parser (RecursionError, not SyntaxError) fails every check with
    that reason, answered without a grading; the stub rule, which parses it too, does not crash on it."""
    from course.engine.parent import isolation

    exercise = load_course(mini_course).get("ex_pass")
    path = mini_course / exercise.stub_rel
    path.write_text("def double(x):\n    return x" + " * 1" * 100_000 + "\n")

    def no_grading(*args: object, **kwargs: object) -> None:
        raise AssertionError("a grading process was started for a file that does not compile")

    monkeypatch.setattr(isolation, "run_isolated", no_grading)
    r = grade(exercise, path, seed=3)
    assert r.status == "failed" and not r.not_tried and r.checks
    assert all("too deeply nested for Python to compile" in c.message for c in r.checks)


def test_loop_is_stopped_by_its_cpu_time_in_the_check_it_was_in(results: dict) -> None:
    """A loop in the second check is stopped by its CPU time (never the clock: the cap is far above it);
    the first check keeps its pass, the second fails pointing at the learner's line, the third was not run."""
    r = results["ex_loop"]
    assert r.status == "timeout" and r.score == 1 and r.max_score == 4
    assert r.message.startswith("your code used 8 s of CPU time, this exercise's limit, and was stopped at "
                                "ex_loop.py line 7, in double; is there a loop that never ends?")
    assert [c.status for c in r.checks] == ["passed", "failed", "not_run"]
    stopped = r.checks[1].message
    assert "8 s of CPU time" in stopped and "ex_loop.py line 7, in double: `while x == 0: pass" in stopped
    assert r.checks[2].message == 'not run: the grading stopped during "double(0) is 0.", before this check'
    assert r.checks[0].output.startswith("double(") and r.checks[1].output == "double(0) called\n"


def test_a_loop_is_stopped_at_its_checks_own_cpu_limit(mini_course: Path) -> None:
    """One check may use `check_timeout_s` of the grading's CPU time: a loop there is stopped at that,
    not at the grading's whole limit, saying so; while it runs, events name the check and its CPU time."""
    from course.engine.parent.verdict import CheckEvent

    meta = mini_course / "exercises/04_ex_loop/exercise.toml"
    meta.write_text('title = "ex_loop"\ntopic = "fixture"\ntimeout_s = 600\ncheck_timeout_s = 2\n')
    exercise = load_course(mini_course).get("ex_loop")
    events: list[CheckEvent] = []
    r = grade(exercise, mini_course / exercise.stub_rel, seed=1, skip_stub=False, on_event=events.append)
    assert r.status == "timeout" and [c.status for c in r.checks] == ["passed", "failed", "not_run"]
    assert r.message.startswith("your code used 2 s of CPU time in this check, the limit of one check, and was "
                                "stopped at ex_loop.py line 7, in double")
    running = [e for e in events if e.status == "running" and e.title == "double(0) is 0."]
    assert running and running[-1].budget_s == 2 and 0 < running[-1].cpu_s <= 2
    assert [e.status for e in events if e.status != "running"] == ["passed"]


def test_exit_at_import(results: dict) -> None:
    """sys.exit at import fails every check and says so."""
    r = results["ex_exit_import"]
    assert r.status == "failed" and "sys.exit(0) while being imported" in r.checks[0].message


def test_os_exit_in_function(results: dict) -> None:
    """os._exit inside the function ends the process: no report, a failure naming the likely cause."""
    r = results["ex_os_exit"]
    assert r.status == "failed" and "os._exit" in r.message


def test_no_checks_is_platform_error(results: dict) -> None:
    """A grader that collects no checks is the course's failure (status error)."""
    r = results["ex_no_tests"]
    assert r.status == "error" and "course validate" in r.message


def test_missing_file_is_not_tried(mini_course: Path) -> None:
    """A workspace without the file is 'not tried', never a crash."""
    exercise = load_course(mini_course).exercises[0]
    r = grade(exercise, mini_course / "nowhere" / "ex_pass.py")
    assert r.not_tried and r.status == "not_tried" and "not tried" in r.message and r.max_score == 3


def _write_signed(path: Path, key: bytes, payload: dict) -> None:
    """A signed file as the notary writes it: a JSON body and its signature."""
    body = json.dumps({"format": report.FORMAT, **payload})
    path.write_text(json.dumps({"body": body, "signature": signing.sign(key, body.encode())}))


def _signed(tmp_path: Path, key: bytes, checks: list[dict], *, ids: tuple[str, ...] = ("test_a", "test_b"),
            complete: int = 1) -> Path:
    """Write a manifest for the checks `ids` and a report with `checks` (the final one, or one written
    after a check when `complete` is 0)."""
    path = tmp_path / "r.json"
    manifest = [{"id": i, "title": i, "max_score": 1.0} for i in ids]
    _write_signed(report.manifest_path(path), key, {"checks": manifest, "collect_errors": []})
    _write_signed(path, key, {"checks": checks, "collect_errors": [], "tampered": [], "complete": complete})
    return path


def test_missing_check_in_report_fails(mini_course: Path, tmp_path: Path) -> None:
    """A verified report lacking an expected check cannot pass."""
    exercise = load_course(mini_course).exercises[0]
    path = _signed(tmp_path, b"k", [{"id": "test_a", "status": "passed", "title": "a"}])
    r = verdict(exercise, path, b"k", Outcome(returncode=0))
    assert r.status == "failed" and r.checks[1].message == "this check did not report a result"


def test_forged_report_fails(mini_course: Path, tmp_path: Path) -> None:
    """A report not signed with the parent's key is refused."""
    exercise = load_course(mini_course).exercises[0]
    passed = [{"id": i, "status": "passed", "title": i} for i in ("test_a", "test_b")]
    path = _signed(tmp_path, b"k", passed)
    outer = json.loads(path.read_text())
    outer["body"] = outer["body"].replace("tampered", "tampered_")
    path.write_text(json.dumps(outer))
    r = verdict(exercise, path, b"k", Outcome(returncode=0))
    assert r.status == "failed" and "forged" in r.message
    assert verdict(exercise, _signed(tmp_path, b"other", passed), b"k", Outcome(0)).status == "failed"


def test_signed_report_passes(mini_course: Path, tmp_path: Path) -> None:
    """The same report, correctly signed and complete, passes: the checks above can fail."""
    exercise = load_course(mini_course).exercises[0]
    passed = [{"id": i, "status": "passed", "title": i} for i in ("test_a", "test_b")]
    assert verdict(exercise, _signed(tmp_path, b"k", passed), b"k", Outcome(0)).status == "passed"


THREE = ("test_a", "test_b", "test_c")


def test_a_run_that_ends_early_keeps_the_checks_it_finished(mini_course: Path, tmp_path: Path) -> None:
    """A report written after the first of three checks, then nothing: the first keeps its pass and
    its output, the second says the run ended, the third was not run and scores nothing."""
    exercise = load_course(mini_course).exercises[0]
    path = _signed(tmp_path, b"k", [{"id": "test_a", "status": "passed"}], ids=THREE, complete=0)
    r = verdict(exercise, path, b"k", Outcome(returncode=0, checks_output={0: "hi\n", 1: "bye\n"}))
    assert [c.status for c in r.checks] == ["passed", "failed", "not_run"] and r.score == 1
    assert r.status == "failed" and "ended before reporting" in r.checks[1].message
    assert [c.output for c in r.checks] == ["hi\n", "bye\n", ""]
    assert r.to_json()["checks"][2] == {"id": "test_c", "title": "test_c", "status": "not_run", "score": 0.0,
                                        "max_score": 1.0,
                                        "message": 'not run: the grading stopped during "test_b", before this check'}
    assert r.to_json()["checks"][0]["output"] == "hi\n"


def test_a_report_left_unfinished_never_passes(mini_course: Path, tmp_path: Path) -> None:
    """Every check passed in a report that was never completed (the run ended after the last check):
    not a pass, whatever the checks say."""
    exercise = load_course(mini_course).exercises[0]
    passed = [{"id": i, "status": "passed"} for i in ("test_a", "test_b")]
    r = verdict(exercise, _signed(tmp_path, b"k", passed, complete=0), b"k", Outcome(returncode=0))
    assert r.status == "failed" and not r.passed


def test_a_wait_stopped_by_the_clock_points_at_the_learners_line(mini_course: Path, tmp_path: Path) -> None:
    """The wall-clock cap stopped a run in its second check: the message says so, with the learner's
    frames from the stack the run wrote (other files' frames left out); the first check keeps its pass."""
    exercise = load_course(mini_course).exercises[0]
    path = _signed(tmp_path, b"k", [{"id": "test_a", "status": "passed"}], ids=THREE, complete=0)
    sub = tmp_path / "learner" / "ex_pass.py"
    dump = (f"main thread 0x7f00aa\nCurrent thread 0x00000000007f00aa (most recent call first):\n"
            f'  File "/usr/lib/python3.11/threading.py", line 320 in wait\n  File "{sub}", line 3 in wait_for\n'
            f'  File "{sub}", line 6 in double\n  File "/grader/test_ex_pass.py", line 9 in test_b\n')
    report.stack_path(path).write_text(dump)
    source = "import threading\ndef wait_for(e):\n    e.wait()\n\ndef double(x):\n    wait_for(threading.Event())\n"
    r = verdict(exercise, path, b"k", Outcome(None, timed_out=True, limit="wall"), sub, source)
    assert r.status == "timeout" and [c.status for c in r.checks] == ["passed", "failed", "not_run"]
    assert r.checks[1].message == (
        "your code waited 100 s of wall-clock time without finishing and was stopped at ex_pass.py line 3, in "
        "wait_for; is there a wait that never returns (a sleep, a lock, a queue, a process that never ends)?\n"
        "where your code was (most recent call last):\n"
        "  ex_pass.py line 6, in double: `wait_for(threading.Event())`\n  ex_pass.py line 3, in wait_for: `e.wait()`")
    assert r.message.endswith('(during "test_b")')


def test_a_run_stopped_for_its_memory_is_a_failure_in_that_check(mini_course: Path, tmp_path: Path) -> None:
    """Stopped for memory before any check finished: the first check fails with the reason, not a timeout."""
    exercise = load_course(mini_course).exercises[0]
    path = _signed(tmp_path, b"k", [], complete=0)
    reason = "your code used more than 512 MiB of memory and was stopped; is an array far larger than the task needs?"
    r = verdict(exercise, path, b"k", Outcome(None, killed_for=reason))
    assert r.status == "failed" and [c.status for c in r.checks] == ["failed", "not_run"]
    assert r.checks[0].message == reason


LOOPING = """import os, pathlib
def double(x):
    pathlib.Path({mark!r}).write_text(str(os.getpid()))
    while True:
        pass
"""


def test_ctrl_c_ends_parallel_gradings_at_once(mini_course: Path) -> None:
    """Ctrl-C during `check` of two looping exercises kills both gradings at once, instead of waiting
    out their limits (ten minutes of CPU time each): `course` ends, and so do both grading processes."""
    import signal
    import subprocess
    import sys

    import psutil

    marks = {}
    for name in ("ex_pass", "ex_loop"):
        exercise = load_course(mini_course).get(name)
        marks[name] = mini_course / f"{name}.pid"
        exercise.stub_path.write_text(LOOPING.format(mark=str(marks[name])))
        exercise.meta_path.write_text(exercise.meta_path.read_text().replace("timeout_s = 20", "timeout_s = 600")
                                      .replace("timeout_s = 8", "timeout_s = 600").replace("= 120", "= 3000"))
    code = "import sys\nfrom course.entry import main\nsys.argv = ['course', *sys.argv[1:]]\nmain()\n"
    args = ["check", "ex_loop", "ex_pass", "--jobs", "2", "--course", str(mini_course)]
    proc = subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=default_sigint)  # noqa: PLW1509 - only resets a signal before exec
    try:
        for mark in marks.values():
            _wait_for_file(mark)  # both loops are running
        # Every process below `course` now: the gradings (each the first process of a PID namespace, so
        # the pid it wrote is its own, not ours) and what holds them.
        pids = [p.pid for p in psutil.Process(proc.pid).children(recursive=True)]
        assert len(pids) >= 2, pids
        proc.send_signal(signal.SIGINT)
        ended(proc, 300)  # far less than either grading's ten minutes of CPU time
    finally:
        proc.kill()
    assert proc.returncode == 130
    assert all(_gone(pid) for pid in pids)


def _wait_for_file(path: Path, limit_s: float = 240) -> Path:
    """`path`, once something has written it (a hang guard, not a measure of speed)."""
    import time

    deadline = time.monotonic() + limit_s
    while not (path.is_file() and path.read_text()):
        assert time.monotonic() < deadline, f"{path.name} was never written"
        time.sleep(0.05)
    return path


def _gone(pid: int, limit_s: float = 60) -> bool:
    """True once `pid` no longer runs (absent, or a zombie), waiting up to `limit_s`."""
    import time

    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


def test_removed_manifest_is_the_learners_failure(mini_course: Path, tmp_path: Path) -> None:
    """A report whose manifest was deleted during grading is a failure (exit 1), never exit 3."""
    exercise = load_course(mini_course).exercises[0]
    passed = [{"id": i, "status": "passed", "title": i} for i in ("test_a", "test_b")]
    path = _signed(tmp_path, b"k", passed)
    report.manifest_path(path).unlink()
    r = verdict(exercise, path, b"k", Outcome(returncode=0))
    assert r.status == "failed" and "report was removed or changed while your code ran" in r.message
    path.unlink()
    assert verdict(exercise, path, b"k", Outcome(returncode=1)).status == "error"
    # Once the grading said its checks began, a report folder removed whole is the learner's doing too.
    began = verdict(exercise, path, b"k", Outcome(returncode=1, checks_began=True))
    assert began.status == "failed" and "removed or changed while your code ran" in began.message


def test_hidden_checks_run_only_when_asked(mini_course: Path) -> None:
    """`course check` never runs the hidden grader; instructors' grading runs both, flagged hidden."""
    course = load_course(mini_course)
    exercise = course.get("ex_fail")
    assert exercise.hidden_grader_path.is_file() and exercise.hidden_max_score == 2
    solution = exercise.solution_path
    public = grade(exercise, solution)
    both = grade(exercise, solution, hidden=True)
    assert public.passed and not any(c.hidden for c in public.checks)
    assert both.passed and [c.id for c in both.checks if c.hidden] == ["test_negative"]
    assert both.max_score == public.max_score + 2 == exercise.max_score + exercise.hidden_max_score
    assert both.to_json()["checks"][-1]["hidden"] is True and "hidden" not in public.to_json()["checks"][0]
