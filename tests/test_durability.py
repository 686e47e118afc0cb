"""Durability: concurrent checks never lose an update, damaged progress is recovered, reset never loses work."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from course.paths import WorkspacePaths
from course.progress import Entry, ProgressStore, now_iso
from support import ended

COURSE_BIN = Path(sys.executable).with_name("course")
STUB = "exercises/01_ex_pass/ex_pass.py"


def _course(*args: str, course: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run the installed `course` command with no course settings inherited."""
    return subprocess.run(
        [str(COURSE_BIN), *args, "--course", str(course)],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _env() -> dict[str, str]:
    """This environment without COURSE_* settings."""
    return {k: v for k, v in os.environ.items() if not k.startswith("COURSE_")}


@pytest.fixture
def workspace(mini_course: Path, tmp_path: Path) -> Path:
    """A fresh learner workspace made by `course init` from the mini-course."""
    target = tmp_path / "ws"
    done = _course("init", str(target), course=mini_course, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return target


@pytest.mark.slow
def test_concurrent_checks_keep_every_update(mini_course: Path, workspace: Path) -> None:
    """Three `course check` processes at once, one exercise each, in one workspace: all three are recorded."""
    expected = {"ex_pass": "passed", "ex_fail": "failed", "ex_exit_import": "failed"}
    procs = [
        subprocess.Popen(
            [str(COURSE_BIN), "check", name, "--json", "--workspace", str(workspace), "--course", str(mini_course)],
            cwd=workspace.parent,
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in expected
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert json.loads(out)["total"] == 1, err
    store = ProgressStore(WorkspacePaths(workspace))
    stored = store.load().exercises
    assert {name: entry.status for name, entry in stored.items()} == expected
    assert store.warnings == []
    assert not list((workspace / ".course").glob("*.tmp"))


def _hammer(folder: str, prefix: str, n: int) -> None:
    """Record `n` results one at a time, as n separate `course check` runs would."""
    store = ProgressStore(WorkspacePaths(Path(folder)))
    for i in range(n):
        entry = Entry(status="passed", score=1, max_score=1, last_checked=now_iso(), grader_hash="h")
        store.record({f"{prefix}{i}": entry})


def test_interleaved_writers_lose_nothing(tmp_path: Path) -> None:
    """Two processes recording 40 results each, interleaved: all 80 survive (the lock serialises them)."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_hammer, args=(str(tmp_path), p, 40)) for p in ("a", "b")]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=60)
        assert w.exitcode == 0
    assert len(ProgressStore(WorkspacePaths(tmp_path)).load().exercises) == 80


@pytest.mark.parametrize("keep", [0.5, 0.0], ids=["cut_in_half", "emptied"])
def test_truncated_progress_is_recovered(mini_course: Path, workspace: Path, keep: float) -> None:
    """A progress file cut short is kept as progress.json.bak, with a warning, and progress starts fresh."""
    entry = Entry(status="passed", score=3, max_score=3, last_checked=now_iso(), grader_hash="h")
    ProgressStore(WorkspacePaths(workspace)).record({"ex_pass": entry})
    path = workspace / ".course" / "progress.json"
    whole = path.read_bytes()
    path.write_bytes(whole[: int(len(whole) * keep)])
    done = _course("progress", "--json", "--workspace", str(workspace), course=mini_course, cwd=workspace)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["passed"] == 0 and all(e["status"] == "not_tried" for e in data["exercises"])
    assert "damaged" in done.stderr and "progress.json.bak" in done.stderr
    assert (workspace / ".course" / "progress.json.bak").read_bytes() == whole[: int(len(whole) * keep)]
    # Writing works again afterwards: the fresh start is a real, usable progress file.
    ProgressStore(WorkspacePaths(workspace)).record({"ex_fail": entry})
    assert set(ProgressStore(WorkspacePaths(workspace)).load().exercises) == {"ex_fail"}


def _backups(workspace: Path) -> list[Path]:
    """The learner's versions kept by `course reset`."""
    return sorted((workspace / ".course" / "backups").glob("*.py"))


def test_reset_keeps_every_version(mini_course: Path, workspace: Path) -> None:
    """Each reset of an edited file keeps that version; the stub comes back each time."""
    stub_path = workspace / STUB
    pristine = (mini_course / STUB).read_bytes()
    versions = [b"def double(x):\n    return x + x  # mine, v1\n", b"def double(x):\n    return 2 * x  # mine, v2\n"]
    for version in versions:
        stub_path.write_bytes(version)
        done = _course("reset", "ex_pass", "--yes", "--workspace", str(workspace), course=mini_course, cwd=workspace)
        assert done.returncode == 0, done.stderr
        assert stub_path.read_bytes() == pristine
    assert sorted(p.read_bytes() for p in _backups(workspace)) == sorted(versions)


def test_reset_of_untouched_or_missing_file(mini_course: Path, workspace: Path) -> None:
    """An untouched stub needs no backup, and reset says so (never that one was kept) without asking; a
    missing file is simply restored."""
    stub_path = workspace / STUB
    pristine = stub_path.read_bytes()
    for confirmed in (["--yes"], []):
        done = _course("reset", "ex_pass", *confirmed, "--workspace", str(workspace), course=mini_course,
                       cwd=workspace)
        assert done.returncode == 0 and _backups(workspace) == [], done.stderr
        said = " ".join(done.stdout.split())
        assert "is still the stub of ex_pass: nothing to restore" in said and "kept" not in said
    stub_path.unlink()
    done = _course("reset", "ex_pass", "--yes", "--workspace", str(workspace), course=mini_course, cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert stub_path.read_bytes() == pristine


def test_reset_without_a_possible_backup_leaves_the_file(mini_course: Path, workspace: Path) -> None:
    """When the backup cannot be written, reset fails and the learner's file is untouched."""
    stub_path = workspace / STUB
    mine = b"def double(x):\n    return 2 * x  # my only copy\n"
    stub_path.write_bytes(mine)
    (workspace / ".course" / "backups").write_text("a file where the backup folder should be")
    done = _course("reset", "ex_pass", "--yes", "--workspace", str(workspace), course=mini_course, cwd=workspace)
    assert done.returncode == 2 and "left unchanged" in done.stderr, done.stderr
    assert stub_path.read_bytes() == mine


def test_reset_asks_before_replacing(mini_course: Path, workspace: Path) -> None:
    """Without --yes and without a terminal, reset refuses (exit 2) and changes nothing."""
    stub_path = workspace / STUB
    mine = b"def double(x):\n    return 2 * x  # mine\n"
    stub_path.write_bytes(mine)
    done = _course("reset", "ex_pass", "--workspace", str(workspace), course=mini_course, cwd=workspace)
    assert done.returncode == 2 and "--yes" in done.stderr
    assert stub_path.read_bytes() == mine and _backups(workspace) == []


@pytest.mark.slow
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_check_all_stopped_keeps_every_finished_verdict(mini_course: Path, workspace: Path, jobs: str) -> None:
    """Ctrl-C during `course check --all` keeps each verdict reached before it: every exercise is recorded
    as its grading ends, not when the whole run does; the grading it kills in flight is no verdict. What was
    kept is shown (the verdicts and their table) and said, and the exit code is a Ctrl-C's."""
    import signal
    import time

    from terminal import Terminal

    toml = mini_course / "course.toml"
    toml.write_text(toml.read_text().replace('"ex_exit_import", "ex_os_exit", "ex_no_tests"', ""))
    (mini_course / "exercises/04_ex_loop/exercise.toml").write_text(
        'title = "ex_loop"\ntopic = "fixture"\ntimeout_s = 600\nwall_timeout_s = 900\n')
    for name in ("01_ex_pass/ex_pass", "02_ex_fail/ex_fail", "03_ex_syntax/ex_syntax", "04_ex_loop/ex_loop"):
        mine = workspace / f"exercises/{name}.py"  # edited, so graded: ex_loop still loops for 0
        mine.write_text(mine.read_text() + "# mine\n")
    term = Terminal(["check", "--all", "-j", jobs, "--workspace", str(workspace), "--course", str(mini_course)],
                    cwd=workspace)
    progress = WorkspacePaths(workspace).progress
    try:
        deadline = time.monotonic() + 300  # bounds a broken run; the loop ends as soon as the file shows them
        while not (progress.exists() and {"ex_pass", "ex_fail", "ex_syntax"} <= set(json.loads(
                progress.read_text() or "{}").get("exercises", {}))):
            assert time.monotonic() < deadline and term.proc.poll() is None, term.text()[-2000:]
            time.sleep(0.05)
        term.expect("3/4 done")  # the display has them too: the Ctrl-C comes after, as a learner's would
        assert term.proc.poll() is None  # still grading ex_loop, which never ends on its own
        os.killpg(term.proc.pid, signal.SIGINT)
        assert ended(term.proc, 120) == 130
    finally:
        term.close()
    stored = ProgressStore(WorkspacePaths(workspace)).load().exercises
    assert {name: e.status for name, e in stored.items()} == {
        "ex_pass": "passed", "ex_fail": "failed", "ex_syntax": "failed"}
    after = term.text().rsplit("now ", 1)[-1]  # what is printed once the live display is gone
    rows = [line.split()[:3] for line in after.splitlines() if re.match(r" +\d+  ex_", line)]
    assert rows == [["1", "ex_pass", "✓"], ["2", "ex_fail", "✗"], ["3", "ex_syntax", "✗"]], after
    assert ("error: interrupted: the 3 verdicts above are recorded; the other exercise was not graded (run the "
            "same `course check` again for it).") in " ".join(after.split()), after
