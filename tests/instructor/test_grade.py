"""`course grade`: a synthetic class graded end to end, resumed, regraded, and refused when the input is bad."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from class_helpers import (
    MAX_TOTAL,
    MINI,
    SOLUTION,
    STUB,
    WRONG,
    assert_gradescope,
    class_course,
    honest_class,
    write_folder,
    write_zip,
)
from course.cli import app
from course.instructor import submissions
from course.registry import load_course

COURSE_BIN = Path(sys.executable).with_name("course")


def _grade(cli: CliRunner, course: Path, subs: Path, out: Path, *args: str) -> tuple[int, dict]:
    """Run `course grade --json` in-process; the exit code and the printed summary."""
    done = cli.invoke(app, ["grade", str(subs), "--out", str(out), "--course", str(course), "--json", *args])
    assert done.stdout.strip(), done.output
    return done.exit_code, json.loads(done.stdout)


@pytest.fixture
def graded(tmp_path: Path, cli: CliRunner) -> tuple[Path, Path, Path, dict[str, float], dict]:
    """A four-student class graded once: (course, submissions, out, expected totals, summary)."""
    course, subs, out = class_course(tmp_path), tmp_path / "subs", tmp_path / "out"
    expected = honest_class(subs)
    code, summary = _grade(cli, course, subs, out)
    assert code == 0, summary
    return course, subs, out, expected, summary


def test_a_class_is_graded_into_gradescope_results_and_a_gradebook(graded: tuple) -> None:
    """Every student gets Gradescope results; the gradebook has a row each and the maxima for all."""
    _, _, out, expected, summary = graded
    for student, total in expected.items():
        results = json.loads((out / student / "results.json").read_text(encoding="utf-8"))
        assert_gradescope(results, student)
        assert results["score"] == total, (student, results["output"])
    alice = json.loads((out / "alice" / "results.json").read_text(encoding="utf-8"))
    hidden = [t for t in alice["tests"] if t["visibility"] == "after_published"]
    assert [t["name"] for t in hidden] == ["ex_fail: double works on negative numbers."]
    assert alice["extra_data"]["isolation"]["private_copy"] is True
    with (out / "gradebook.csv").open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["student"] for r in rows] == ["alice", "bob", "carol", "dave"]
    assert {r["student"]: float(r["total"]) for r in rows} == expected
    assert {float(r["max_total"]) for r in rows} == {MAX_TOTAL}
    assert rows[2]["ex_pass"] == "0" and rows[2]["ex_fail"] == "0"  # carol tried nothing, and still has a row
    assert summary["students"] == 4 and summary["graded_now"] == 4 and summary["max_total"] == MAX_TOTAL


def test_the_summary_says_which_rules_the_class_breaks(graded: tuple) -> None:
    """Per exercise and check: passes, failures and the most common failure message."""
    _, _, out, _, summary = graded
    assert json.loads((out / "summary.json").read_text(encoding="utf-8")) == summary
    ex_pass, ex_fail = summary["exercises"]
    assert (ex_pass["passed"], ex_pass["failed"], ex_pass["not_tried"]) == (1, 1, 2)
    assert (ex_fail["passed"], ex_fail["failed"], ex_fail["not_tried"]) == (2, 1, 1)
    doubles = {c["id"]: c for c in ex_fail["checks"]}["test_doubles"]
    assert (doubles["passed"], doubles["failed"]) == (2, 1)
    assert doubles["common_failures"][0]["count"] == 1
    assert "should be" in doubles["common_failures"][0]["message"]


def test_a_rerun_grades_nobody_again_and_regrade_grades_everyone(graded: tuple, cli: CliRunner) -> None:
    """Unchanged graders and files are not graded again; a changed file is; --regrade grades what was tried."""
    course, subs, out, _, _ = graded
    before = (out / "alice" / "results.json").read_bytes()
    code, summary = _grade(cli, course, subs, out)
    assert code == 0 and summary["graded_now"] == 0 and summary["reused"] == 4
    assert (out / "alice" / "results.json").read_bytes() == before
    write_folder(subs / "carol", {"ex_pass.py": SOLUTION})
    code, summary = _grade(cli, course, subs, out)
    assert summary["graded_now"] == 1 and summary["totals"]["carol"] == 3.0
    code, summary = _grade(cli, course, subs, out, "--regrade", "--only", "ex_pass")
    # Everyone who submitted an ex_pass.py: dave's sits in a hidden folder, which is not his work.
    assert summary["graded_now"] == 3 and summary["totals"] == {"alice": 8.0, "bob": 5.0, "carol": 3.0, "dave": 0.0}


def test_a_changed_grader_is_graded_again(graded: tuple, cli: CliRunner) -> None:
    """Editing a hidden grader changes its hash: every student who tried it is graded again."""
    course, subs, out, _, _ = graded
    hidden = course / "graders" / "02_ex_fail" / "hidden" / "test_ex_fail_hidden.py"
    hidden.write_text(hidden.read_text(encoding="utf-8") + "\n# changed\n", encoding="utf-8")
    code, summary = _grade(cli, course, subs, out)
    assert code == 0 and summary["graded_now"] == 3  # alice, bob and dave tried ex_fail; carol did not


def test_a_platform_failure_is_exit_3_and_said_in_that_students_results(tmp_path: Path, cli: CliRunner) -> None:
    """A grader that collects nothing fails the platform: exit 3, that exercise says so, the rest is graded."""
    course = class_course(tmp_path)
    grader = course / "graders" / "01_ex_pass" / "test_ex_pass.py"
    grader.write_text("import pytest\n\nraise RuntimeError('broken grader')\n", encoding="utf-8")
    subs = tmp_path / "subs"
    write_folder(subs / "alice", {"ex_pass.py": SOLUTION, "ex_fail.py": SOLUTION})
    code, summary = _grade(cli, course, subs, tmp_path / "out")
    assert code == 3 and summary["platform_errors"] == ["alice"]
    results = json.loads((tmp_path / "out" / "alice" / "results.json").read_text(encoding="utf-8"))
    assert "platform failed on ex_pass" in results["output"]
    assert results["extra_data"]["exercises"]["ex_fail"]["status"] == "passed"
    with (tmp_path / "out" / "gradebook.csv").open(encoding="utf-8") as fh:
        (row,) = list(csv.DictReader(fh))
    # Never graded: no score of alice's in that column, as the docs say, and the note says why.
    assert row["ex_pass"] == "" and row["ex_fail"] == "5" and "platform failed on ex_pass" in row["note"]


def test_an_archive_that_cannot_be_read_is_named_at_any_depth(tmp_path: Path, cli: CliRunner) -> None:
    """A damaged zip among a Canvas student's files, in a Moodle student's folder, or inside a student's own zip:
    each student is graded from the rest, their row says what could not be read, the summary names the entry,
    and the run ends with exit 2. A zip inside a zip is read."""
    course = class_course(tmp_path)
    canvas = tmp_path / "canvas"
    write_folder(canvas, {"lovelaceada_1001_5551_ex_pass.py": SOLUTION, "turingalan_1002_5552_ex_pass.py": SOLUTION})
    (canvas / "lovelaceada_1001_5553_work.zip").write_bytes(b"PK\x03\x04 cut short")
    moodle = tmp_path / "moodle" / "Ada Lovelace_1001_assignsubmission_file_"
    write_folder(moodle, {"ex_pass.py": SOLUTION})
    (moodle / "work.zip").write_bytes(os.urandom(2000))
    import io
    import zipfile

    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as archive:
        archive.writestr("ex_pass.py", SOLUTION)
    nested = tmp_path / "nested"
    write_zip(nested / "s5.zip", {"broken.zip": "PK not a zip"})
    with zipfile.ZipFile(nested / "s5.zip", "a") as archive:
        archive.writestr("work/inner.zip", inner.getvalue())
    expected = {"canvas": ("1001", "lovelaceada_1001", "work.zip", {"1001": 3.0, "1002": 3.0}),
                "moodle": ("1001", moodle.name, "work.zip", {"1001": 3.0}),
                "nested": ("s5", "s5.zip", "broken.zip", {"s5": 3.0})}
    for kind, (student, entry, archive_name, totals) in expected.items():
        code, summary = _grade(cli, course, tmp_path / kind, tmp_path / f"out-{kind}")
        assert code == 2 and summary["totals"] == totals, (kind, summary["totals"])
        (bad,) = summary["bad_entries"]
        assert bad["entry"] == entry and bad["student"] == student and bad["graded"] is True, bad
        assert f"{archive_name} is not a readable zip" in bad["reason"] and "the rest of it was graded" in bad["reason"]
        with (tmp_path / f"out-{kind}" / "gradebook.csv").open(encoding="utf-8") as fh:
            rows = {r["student"]: r for r in csv.DictReader(fh)}
        assert set(rows) == set(totals)  # no row of its own: the student's row says it
        assert f"{archive_name} is not a readable zip" in rows[student]["note"], rows[student]


def test_bad_entries_are_named_and_everyone_else_graded(tmp_path: Path, cli: CliRunner) -> None:
    """No bad entry stops the class: a stray file, an unreadable zip, an unusable name and two entries of
    one student each get a line in the gradebook and the summary saying why; the others are graded, and
    the run ends with exit 2."""
    course, subs = class_course(tmp_path), tmp_path / "subs"
    write_folder(subs / "alice", {"ex_pass.py": SOLUTION, "ex_fail.py": SOLUTION})
    (subs / "notes.txt").write_text("x")
    (subs / "broken.zip").write_bytes(b"not a zip")
    write_folder(subs / "bad name", {"ex_pass.py": SOLUTION})
    (subs / "eve").mkdir()
    write_zip(subs / "eve.zip", {"ex_pass.py": SOLUTION})
    code, summary = _grade(cli, course, subs, tmp_path / "out")
    assert code == 2 and summary["totals"] == {"alice": 8.0}, summary
    reasons = {b["entry"]: b["reason"] for b in summary["bad_entries"]}
    phrases = {"notes.txt": "is not a submission", "broken.zip": "not a readable zip", "bad name": "usable student id",
               "eve": "both student `eve`", "eve.zip": "both student `eve`"}
    assert set(reasons) == set(phrases) and all(phrases[k] in reasons[k] for k in phrases), reasons
    gradebook = (tmp_path / "out" / "gradebook.csv").read_text(encoding="utf-8")
    assert all(f"not graded: {reason}" in gradebook for reason in reasons.values())
    assert (tmp_path / "out" / "alice" / "results.json").is_file() and not (tmp_path / "out" / "eve").exists()


def test_only_a_missing_or_empty_submissions_folder_stops_the_run(tmp_path: Path, cli: CliRunner) -> None:
    """Nothing to grade at all is a usage error before anything runs."""
    course = class_course(tmp_path)
    (tmp_path / "subs").mkdir()
    done = cli.invoke(app, ["grade", str(tmp_path / "subs"), "--out", str(tmp_path / "out"), "--course", str(course)])
    assert done.exit_code == 2 and "holds no submissions" in done.output, done.output


def test_an_empty_folder_is_graded_zero_and_untouched_stubs_are_not_tried(tmp_path: Path, cli: CliRunner) -> None:
    """An empty entry is a student who tried nothing; a stub handed back untouched (spacing aside) is not
    tried either: no points, and in no pass rate or common failure. A stub that runs (ex_fail's adds one)
    is graded like any file, as the runner grades it."""
    course, subs = class_course(tmp_path), tmp_path / "subs"
    (subs / "ivan").mkdir(parents=True)
    stub_of_fail = (MINI / "exercises" / "02_ex_fail" / "ex_fail.py").read_text(encoding="utf-8")
    write_folder(subs / "judy", {"ex_pass.py": STUB.replace("\n", "\r\n").replace("    ", "\t") + "\n\n",
                                 "ex_fail.py": stub_of_fail})
    write_folder(subs / "kim", {"ex_pass.py": WRONG})
    code, summary = _grade(cli, course, subs, tmp_path / "out")
    assert code == 0 and summary["totals"] == {"ivan": 0.0, "judy": 0.0, "kim": 0.0}
    judy = json.loads((tmp_path / "out" / "judy" / "results.json").read_text(encoding="utf-8"))
    statuses = {name: r["status"] for name, r in judy["extra_data"]["exercises"].items()}
    assert statuses == {"ex_pass": "not_tried", "ex_fail": "failed"}
    assert "ex_pass.py is the stub as handed out" in judy["output"]
    ex_pass, ex_fail = summary["exercises"]
    assert (ex_pass["tried"], ex_pass["not_tried"], ex_pass["pass_rate"]) == (1, 2, 0.0)
    assert (ex_fail["tried"], ex_fail["not_tried"]) == (1, 2)
    assert all("NotImplementedError" not in f["message"] for c in ex_pass["checks"] for f in c["common_failures"])


def test_references_and_notes_survive_a_rerun_and_syntax_errors_are_quoted_whole(tmp_path: Path,
                                                                                 cli: CliRunner) -> None:
    """A rerun that grades nobody still reports the references; the "several files" note is written;
    a syntax error is quoted with its line and caret in the summary."""
    course, subs = class_course(tmp_path), tmp_path / "subs"
    write_folder(subs / "lee", {"ex_pass.py": SOLUTION, "old/ex_pass.py": WRONG, "ex_fail.py": "def double(x:\n"})
    code, first = _grade(cli, course, subs, tmp_path / "out")
    assert code == 0 and first["references"] == {"ex_pass": "passed", "ex_fail": "passed"}
    code, again = _grade(cli, course, subs, tmp_path / "out")
    assert again["graded_now"] == 0 and again["references"] == first["references"]
    lee = json.loads((tmp_path / "out" / "lee" / "results.json").read_text(encoding="utf-8"))
    assert "several files could be ex_pass.py; graded ex_pass.py, not old/ex_pass.py" in lee["output"]
    failure = {c["id"]: c for c in again["exercises"][1]["checks"]}["test_doubles"]["common_failures"][0]["message"]
    assert "syntax error" in failure and "def double(x:" in failure and "^" in failure and "SyntaxError" in failure


def test_sigterm_cleans_up_like_ctrl_c(tmp_path: Path) -> None:
    """SIGTERM ends `course grade` as Ctrl-C does: gradings stopped, no scratch folder (with a student's
    file in it) left behind, and a rerun grades what was left."""
    course, subs, out = class_course(tmp_path), tmp_path / "subs", tmp_path / "out"
    for k in range(3):
        write_folder(subs / f"s{k}", {"ex_pass.py": "def double(x):\n    while True:\n        pass\n"})
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("COURSE_")}, "TMPDIR": str(scratch)}
    argv = [str(COURSE_BIN), "grade", str(subs), "--out", str(out), "--course", str(course), "--jobs", "1",
            "--trust-submissions"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, text=True)
    deadline = time.monotonic() + 120
    while not list(scratch.glob("course-class-*/*/ex_pass.py")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(scratch.glob("course-class-*/*/ex_pass.py")), "no grading started"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143 and "interrupted" in err, err
    assert not list(scratch.glob("course-class-*")) and not list(scratch.glob("course-grade-*")), list(
        scratch.iterdir())
    assert not list(out.glob("*/results.json"))  # the one in flight was not finished, nothing half-written


def test_entries_locate_files_without_following_links(tmp_path: Path) -> None:
    """The course's path wins over loose files; links and oversized files are never read."""
    course = load_course(class_course(tmp_path))
    classmate = write_folder(tmp_path / "subs" / "alice", {"ex_pass.py": "SECRET = 1\n"})
    mallory = write_folder(tmp_path / "subs" / "mallory", {"exercises/01_ex_pass/ex_pass.py": SOLUTION,
                                                           "old/ex_pass.py": WRONG, "ex_fail.py": "#" * (2 << 20)})
    (mallory / "sub").mkdir()
    (mallory / "sub" / "ex_fail.py").symlink_to(classmate / "ex_pass.py")
    found = submissions.Entry.of("mallory", mallory).locate(course.exercises)
    assert found["ex_pass"].rel == "exercises/01_ex_pass/ex_pass.py" and found["ex_pass"].data == SOLUTION.encode()
    assert found["ex_fail"].rel == "ex_fail.py" and not found["ex_fail"].tried and "limit" in found["ex_fail"].note
    zipped = write_zip(tmp_path / "z.zip", {"../../etc/ex_pass.py": SOLUTION})
    assert submissions.Entry.of("z", zipped).locate(course.exercises)["ex_pass"].rel == "etc/ex_pass.py"


@pytest.mark.slow
def test_a_killed_run_loses_only_the_students_in_flight(tmp_path: Path) -> None:
    """Kill `course grade` once a student's results exist: a rerun grades only those without results."""
    course, subs, out = class_course(tmp_path), tmp_path / "subs", tmp_path / "out"
    for k in range(6):
        write_folder(subs / f"s{k}", {"ex_pass.py": SOLUTION, "ex_fail.py": WRONG})
    argv = [str(COURSE_BIN), "grade", str(subs), "--out", str(out), "--course", str(course), "--jobs", "1", "--json"]
    scratch = tmp_path / "tmp"  # a killed run cannot remove its scratch folders: keep them out of the machine's /tmp
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch)}
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                            env=env)
    deadline = time.monotonic() + 60
    while not list(out.glob("*/results.json")) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    survived = {p.parent.name for p in out.glob("*/results.json")}
    assert 1 <= len(survived) < 6
    for path in out.glob("*/results.json"):
        json.loads(path.read_text(encoding="utf-8"))  # every file there is whole
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False, env=env)
    summary = json.loads(done.stdout)
    assert done.returncode == 0 and summary["graded_now"] == 6 - len(survived), summary
    assert summary["totals"] == {f"s{k}": 3.0 for k in range(6)}
