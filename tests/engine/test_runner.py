"""The runner on the mini-course: one outcome per exercise, verdicts only from signed reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from course import signing
from course.engine import report
from course.engine.isolation import Outcome
from course.engine.runner import grade, grade_many
from course.engine.verdict import verdict
from course.registry import load_course


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Grade every mini-course exercise once, two at a time."""
    import shutil

    from conftest import FIXTURES

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


def test_loop_times_out(results: dict) -> None:
    """An endless loop ends as a timeout within the limit, every check failed."""
    r = results["ex_loop"]
    assert r.status == "timeout" and "3 s limit" in r.message
    assert r.duration_s < 3 + 5 and len(r.checks) == 2


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
    assert r.not_tried and r.status == "failed" and "not tried" in r.message


def _write_signed(path: Path, key: bytes, payload: dict) -> None:
    """A signed file as the notary writes it: a JSON body and its signature."""
    body = json.dumps({"format": report.FORMAT, **payload})
    path.write_text(json.dumps({"body": body, "signature": signing.sign(key, body.encode())}))


def _signed(tmp_path: Path, key: bytes, checks: list[dict]) -> Path:
    """Write a manifest for two checks and a final report with `checks`."""
    path = tmp_path / "r.json"
    manifest = [{"id": i, "title": i, "max_score": 1.0} for i in ("test_a", "test_b")]
    _write_signed(report.manifest_path(path), key, {"checks": manifest, "collect_errors": []})
    _write_signed(path, key, {"checks": checks, "collect_errors": [], "tampered": []})
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


def test_ctrl_c_ends_parallel_gradings_at_once(mini_course: Path) -> None:
    """Ctrl-C during `check --all` kills the running gradings instead of waiting out their timeouts."""
    import signal
    import subprocess
    import sys
    import time

    meta = mini_course / "exercises/04_ex_loop/exercise.toml"
    meta.write_text(meta.read_text().replace("timeout_s = 3", "timeout_s = 120"))
    code = "import sys\nfrom course.entry import main\nsys.argv = ['course', *sys.argv[1:]]\nmain()\n"
    args = ["check", "ex_loop", "ex_pass", "--jobs", "2", "--course", str(mini_course)]
    proc = subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(4)  # both gradings under way (the loop one runs until stopped)
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=30)
    assert time.monotonic() - started < 15
    assert proc.returncode == 130
    leftover = subprocess.run(["pgrep", "-f", str(mini_course / "exercises/04_ex_loop")], capture_output=True)
    assert leftover.stdout == b""


def test_removed_manifest_is_the_learners_failure(mini_course: Path, tmp_path: Path) -> None:
    """A report whose manifest was deleted during grading is a failure (exit 1), never exit 3."""
    exercise = load_course(mini_course).exercises[0]
    passed = [{"id": i, "status": "passed", "title": i} for i in ("test_a", "test_b")]
    path = _signed(tmp_path, b"k", passed)
    report.manifest_path(path).unlink()
    r = verdict(exercise, path, b"k", Outcome(returncode=0))
    assert r.status == "failed" and "forged" in r.message
    path.unlink()
    assert verdict(exercise, path, b"k", Outcome(returncode=1)).status == "error"


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
