"""The warm worker: same verdicts as a cold run, nothing left behind, and it never starts a JAX backend."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from course.engine.parent import invocation
from course.engine.parent.runner import grade, start_worker
from course.engine.parent.worker import Worker
from course.registry import Course, load_course
from support import default_sigint, ended

MINI = Path(__file__).parents[1] / "fixtures" / "mini_course"
EXPECTED = {
    "ex_pass": "passed",
    "ex_fail": "failed",
    "ex_syntax": "failed",
    "ex_loop": "timeout",
    "ex_exit_import": "failed",
    "ex_os_exit": "failed",
    "ex_no_tests": "error",
}


@pytest.fixture(scope="module")
def worker() -> Iterator[Worker]:
    """One warm worker for the module (it takes a second or two to import JAX)."""
    started = start_worker()
    assert started.ready(), started.reason
    yield started
    started.close()


@pytest.fixture(scope="module")
def mini() -> Course:
    """The fixture course, one exercise per outcome."""
    return load_course(MINI.resolve())


class Recording:
    """A launcher that forwards to the worker and remembers the pids of the gradings it started."""

    def __init__(self, worker: Worker) -> None:
        self.worker, self.pids = worker, []

    def launch(self, command: list[str], **kwargs: Any) -> Any:
        """Launch through the worker and note the child's pid."""
        child = self.worker.launch(command, **kwargs)
        assert child is not None, "the worker refused to launch"
        self.pids.append(child.pid)
        return child


def gone(pid: int) -> bool:
    """True when `pid` no longer runs (absent, or a zombie waiting to be reaped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in ("Z", "X")


def comparable(result: Any) -> dict[str, Any]:
    """A result's JSON without the one field that differs between runs."""
    data = result.to_json()
    data.pop("duration_s")
    return data


@pytest.mark.parametrize("name", list(EXPECTED))
def test_warm_and_cold_give_the_same_verdict(name: str, mini: Course, worker: Worker) -> None:
    """Each mini-course outcome is graded identically, check by check and message by message."""
    exercise = mini.get(name)
    recording = Recording(worker)
    warm = grade(exercise, exercise.stub_path, seed=1234, worker=recording)
    cold = grade(exercise, exercise.stub_path, seed=1234)
    # A file that does not compile is answered at once, by the parent, with no grading process at all.
    assert bool(recording.pids) == (name != "ex_syntax"), "the warm path did not go through the worker"
    assert warm.status == EXPECTED[name], warm.message
    assert comparable(warm) == comparable(cold)
    assert all(gone(pid) for pid in recording.pids)


def test_timeout_kills_the_group_and_escaped_processes(tmp_path: Path, mini: Course, worker: Worker) -> None:
    """A loop past the limit, with a child in the group and one that left it, leaves nothing running."""
    pid_file = tmp_path / "pids"
    stub = tmp_path / "ex_loop.py"
    token = f"sleeper{os.getpid()}x{id(stub)}"
    stub.write_text(
        textwrap.dedent(f"""
        import subprocess, pathlib, sys
        def double(x):
            sleep = [sys.executable, "-c", "import time; time.sleep(300)", {token!r}]
            a = subprocess.Popen(sleep)
            b = subprocess.Popen(sleep, start_new_session=True)
            pathlib.Path({str(pid_file)!r}).write_text(f"{{a.pid}} {{b.pid}}")
            while True:
                pass
        """)
    )
    recording = Recording(worker)
    result = grade(mini.get("ex_loop"), stub, worker=recording)
    assert result.status == "timeout"
    assert len(pid_file.read_text().split()) == 2  # both were started (pids as the grading's namespace numbers them)
    # Found by what they run, since a grading's pids are its own namespace's: none is left.
    assert all(gone(pid) for pid in recording.pids)
    assert not [p for p in psutil.process_iter(["cmdline"]) if token in (p.info["cmdline"] or [])]


def test_backends_start_in_the_child_only(tmp_path: Path, worker: Worker) -> None:
    """A grader using JAX gets its device count in the child; the worker stays fork-safe throughout."""
    course = _jax_course(tmp_path)
    exercise = course.get("ex_jax")
    for _ in range(2):  # a second fork after a child used JAX must work as well
        recording = Recording(worker)
        result = grade(exercise, exercise.stub_path, worker=recording)
        assert result.status == "passed", result.message + result.output
    status = worker.status()
    assert status["pid"] == worker.pid
    assert status["backends"] == []
    assert status["threads"] == 1
    # What every child shares: the warm-up's objects out of the collector's sight, JAX's plugins looked for.
    assert status["frozen"] > 100_000 and status["plugins"]


def test_ctrl_c_leaves_no_process_behind(tmp_path: Path) -> None:
    """SIGINT to `course` mid-grading ends the grading, the worker and itself.

    The loop may use ten minutes of CPU time here, so the grading cannot end on its own before the
    signal comes, however slow the machine; the waits below only guard against a hang.
    """
    course = tmp_path / "mini"
    shutil.copytree(MINI, course, ignore=shutil.ignore_patterns("__pycache__"))
    meta = course / "exercises" / "04_ex_loop" / "exercise.toml"
    meta.write_text(meta.read_text().replace("timeout_s = 8", "timeout_s = 600").replace("= 120", "= 3000"))
    script = tmp_path / "grade_loop.py"
    script.write_text(
        textwrap.dedent(f"""
        from pathlib import Path
        from course.registry import load_course
        from course.engine.parent.runner import grade, start_worker
        exercise = load_course(Path({str(course)!r})).get("ex_loop")
        worker = start_worker()
        assert worker.ready(), worker.reason
        print(worker.pid, flush=True)
        grade(exercise, exercise.stub_path, worker=worker)
        """)
    )
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                            preexec_fn=default_sigint)  # noqa: PLW1509 - only resets a signal before exec
    assert proc.stdout is not None
    worker_pid = int(proc.stdout.readline())
    grading = _wait_for_child(worker_pid)
    proc.send_signal(signal.SIGINT)
    assert ended(proc, 120) != 0
    deadline = time.monotonic() + 120
    while not (gone(worker_pid) and gone(grading)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gone(worker_pid)
    assert gone(grading)


def _wait_for_child(parent: int) -> int:
    """The pid of the first child of `parent` (the grading it forked), waiting for it to appear."""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == parent:
                    return int(stat.parent.name)
            except (OSError, IndexError, ValueError):
                continue
        time.sleep(0.05)
    raise AssertionError("the worker never forked a grading")


def _jax_course(root: Path) -> Course:
    """A one-exercise course whose grader needs two CPU devices and a jitted call."""
    (root / "course.toml").write_text('format_version = 1\ntitle = "jax"\nexercises = ["ex_jax"]\n')
    folder = root / "exercises" / "01_ex_jax"
    folder.mkdir(parents=True)
    (folder / "exercise.toml").write_text('title = "jax"\ntopic = "fixture"\ndevices = 2\n')
    (folder / "ex_jax.py").write_text("def double(x):\n    return 2 * x\n")
    grader = root / "graders" / "01_ex_jax"
    grader.mkdir(parents=True)
    (grader / "test_ex_jax.py").write_text(
        textwrap.dedent('''
        """Needs two CPU devices."""
        from course.grading import check

        def test_devices(submission):
            """Two CPU devices, and a jitted call works."""
            import jax
            import jax.numpy as jnp

            check(jax.device_count() == 2, f"{jax.device_count()} devices, not 2")
            check(float(jax.jit(submission.double)(jnp.float32(3))) == 6.0, "jit gave the wrong value")
        ''')
    )
    return load_course(root)


def test_worker_refuses_other_jax_settings(mini: Course, worker: Worker) -> None:
    """A grading that needs other JAX_* variables than the worker imported with runs cold instead."""
    exercise = mini.get("ex_pass")
    env = {**os.environ, "JAX_ENABLE_X64": "1"}
    child = worker.launch(
        [*invocation.python_module("pytest"), "x"],
        fds={"keyfd": 0, "eventsfd": 0, "linkfd": 0, "gofd": 0},
        cwd=MINI,
        env=env,
        memory_mb=exercise.meta.memory_mb,
    )
    assert child is None
    assert "JAX_ENABLE_X64" in worker.reason


def test_compilation_cache_keeps_verdicts(worker: Worker, tmp_path: Path) -> None:
    """With the compilation cache warm, compile counting still catches a helper rebuilt per call.

    Compile events fire on cache hits too, so a cache never turns a wrong file into a pass; the
    worker (started without a cache) applies each grading's own cache settings in the child.
    """
    course = load_course(Path(__file__).resolve().parents[2])
    exercise = course.get("update_with_donate")
    cache = tmp_path / "xla-cache"
    wrong = exercise.wrong_dir / "jit_per_call.py"
    verdicts, entries = [], []
    for source in (exercise.solution_path, wrong, exercise.solution_path, wrong):
        dest = tmp_path / source.stem / "update_with_donate.py"
        dest.parent.mkdir(exist_ok=True)
        dest.write_bytes(source.read_bytes())
        for entry in cache.glob("*-cache"):  # long unused: a hit must make it recent
            os.utime(entry, (1e9, 1e9))
        result = grade(exercise, dest, seed=11, worker=worker, cache_dir=cache)
        verdicts.append((result.status, sorted(c.id for c in result.checks if c.status != "passed")))
        entries.append({p.name: p.stat().st_mtime for p in cache.glob("*-cache")})
    assert verdicts[0] == verdicts[2] == ("passed", [])
    assert verdicts[1] == verdicts[3] and "test_helper_built_once" in verdicts[1][1]
    # The solution graded again wrote nothing new and marked what it used; JAX's own bound (a lock file,
    # access-time files) is not in use, and no half-written entry is left.
    assert entries[0] and entries[2].keys() == entries[1].keys()
    assert any(when > 1e9 for when in entries[2].values())
    assert sorted(p.name for p in cache.iterdir()) == sorted(entries[3])


class KeyThief:
    """A launcher that reads the key and gives up, as a worker's late child would before the worker
    was ended: the cold run that replaces it must still get a key of its own."""

    def launch(self, command: list[str], *, fds: dict[str, int], **kwargs: Any) -> Any:
        """Take the key from the pipe, then say no."""
        os.read(fds["keyfd"], 4096)
        return None


def test_a_cold_run_after_a_failed_launch_has_its_key(mini: Course) -> None:
    """Whatever happened to the first key pipe, the cold run signs with the key the parent checks."""
    exercise = mini.get("ex_pass")
    assert grade(exercise, exercise.solution_path, worker=KeyThief()).status == "passed"


def test_a_worker_that_stops_answering_is_ended(mini: Course, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stopped worker never answers a launch: it is killed (its children with it) and the grading runs cold."""
    import course.engine.parent.worker as worker_module

    monkeypatch.setattr(worker_module, "LAUNCH_TIMEOUT_S", 0.5)
    silent = start_worker()
    try:
        assert silent.ready(), silent.reason
        os.kill(silent.pid, signal.SIGSTOP)
        exercise = mini.get("ex_pass")
        result = grade(exercise, exercise.solution_path, worker=silent)
        assert result.status == "passed" and silent.launched == 0 and not silent.ready()
        deadline = time.monotonic() + 120
        while not gone(silent.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert gone(silent.pid)
    finally:
        silent.close()
