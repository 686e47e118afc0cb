"""The platform layer: Linux-only features detected, turned off on request, and the same verdicts without them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from course.engine.contain import system

MINI = Path(__file__).resolve().parents[1] / "fixtures" / "mini_course"
COURSE_BIN = Path(sys.executable).with_name("course")


def _features(env: dict[str, str]) -> dict[str, bool]:
    """The features a fresh process detects under `env`."""
    code = (
        "import dataclasses, json; from course.engine.contain import system; "
        "print(json.dumps(dataclasses.asdict(system.FEATURES)))"
    )
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def test_portable_mode_turns_every_linux_feature_off() -> None:
    """COURSE_PORTABLE=1 pretends to be a platform without prlimit, prctl or the fork server's needs."""
    env = {k: v for k, v in os.environ.items() if k != "COURSE_PORTABLE"}
    assert not any(_features({**env, "COURSE_PORTABLE": "1"}).values())
    if sys.platform.startswith("linux"):
        assert all(_features(env).values())


def test_resident_size_and_descendants_come_from_psutil() -> None:
    """A sleeping child is found among our descendants, with a resident size, and killed."""
    # The child says when Python is up: before that, a busy machine may show it still forking, a few KiB.
    child = subprocess.Popen([sys.executable, "-c", "import time; print('up', flush=True); time.sleep(30)"],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline() == "up\n"
        found = {p.pid for p in system.descendants(os.getpid())}
        assert child.pid in found
        assert system.resident_mb(child.pid) > 1
        assert system.started_at(child.pid) is not None
        system.kill([psutil.Process(child.pid)])
        assert child.wait(timeout=10) != 0
    finally:
        child.kill()
    assert system.resident_mb(child.pid) == 0.0


def test_marked_processes_found_without_a_subreaper() -> None:
    """The portable sweep kills a process that carries this run's grading marker, and spares the rest,
    another run's gradings included."""
    since = time.time() - 1
    name, ours = system.GRADING_MARKER
    sleeper = [sys.executable, "-c", "import time; time.sleep(30)"]
    marked = subprocess.Popen(sleeper, env={**os.environ, name: ours})
    other = subprocess.Popen(sleeper, env={**os.environ, name: "another-course-run"})
    plain = subprocess.Popen(sleeper)
    try:
        deadline = time.monotonic() + 10
        while not system.is_marked(psutil.Process(marked.pid)):  # the environment is set once exec'd
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert system.kill_marked_since(since, spare=set())
        assert marked.wait(timeout=10) != 0
        assert plain.poll() is None and other.poll() is None
    finally:
        for proc in (marked, other, plain):
            proc.kill()


def _verdicts(workspace: Path, env: dict[str, str]) -> dict[str, tuple[str, list[str]]]:
    """`course check --all --json` in `workspace`: each exercise's status and its checks' statuses."""
    done = subprocess.run(
        [str(COURSE_BIN), "check", "--all", "--json", "--course", str(MINI), "--workspace", str(workspace)],
        env=env, capture_output=True, text=True, timeout=900, check=False,
    )
    assert done.stdout.strip(), done.stderr
    return {e["name"]: (e["status"], [c["status"] for c in e["checks"]]) for e in json.loads(done.stdout)["exercises"]}


@pytest.mark.slow
def test_same_verdicts_without_linux_features(tmp_path: Path) -> None:
    """The fixture course, graded with every Linux-only feature off, gets exactly the usual verdicts."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("COURSE_")}
    verdicts = []
    for mode, extra in (("linux", {}), ("portable", {"COURSE_PORTABLE": "1"})):
        workspace = tmp_path / mode
        subprocess.run([str(COURSE_BIN), "init", str(workspace), "--course", str(MINI)], env=env,
                       capture_output=True, check=True)
        verdicts.append(_verdicts(workspace, {**env, **extra}))
    assert verdicts[0] == verdicts[1]
    statuses = {status for status, _ in verdicts[0].values()}
    assert {"passed", "failed", "timeout", "error"} <= statuses, verdicts[0]


def test_an_exit_descriptor_turns_readable_when_its_child_exits() -> None:
    """Linux's pidfd: not readable while the child runs, readable once it has exited (the worker tells a grading's
    exit the moment it happens instead of at its next poll); elsewhere None, and the worker polls."""
    import select

    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    fd = system.exit_fd(child.pid)
    if fd is None:
        child.kill()
        child.wait()
        assert not hasattr(os, "pidfd_open") or sys.platform != "linux", "Linux has pidfds since 5.3"
        return
    try:
        assert select.select([fd], [], [], 0.2)[0] == [], "readable while the child still runs"
        assert child.stdin is not None
        child.stdin.close()  # the child reads to the end of its input, then exits
        assert select.select([fd], [], [], 60)[0] == [fd]
        assert child.wait(timeout=60) == 0
    finally:
        os.close(fd)
