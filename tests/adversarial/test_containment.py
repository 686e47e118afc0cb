"""What the operating system keeps a grading to, through the real `course check`, cold and warm, and in a host.

Where the machine gives each grading a PID namespace of its own (`course.engine.contain.contain`), nothing a
submission starts outlives its grading, whatever it does; its processes cannot read the grading's
memory (where the key is); and a host process that grades (a Jupyter kernel) keeps its own
children. Where the machine cannot, each test asserts the weaker promise of `docs/security.md`.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from course.engine.contain import protections
from course.engine.parent import runner
from course.registry import load_course

HERE = Path(__file__).parent
COURSE_DIR = HERE / "course"
ATTACKS = HERE / "attacks"
COURSE_BIN = Path(sys.executable).with_name("course")
STUB = "exercises/01_double/double.py"
CONTAINED = protections.available().pid_namespace


def _write(workspace: Path, attack: str, token: str, rel: str = STUB) -> Path:
    """Put an attack file at the learner's place for `rel`."""
    stub = workspace / rel
    stub.parent.mkdir(parents=True, exist_ok=True)
    stub.write_text((ATTACKS / f"{attack}.py").read_text(encoding="utf-8").replace("__TOKEN__", token))
    return stub


def _check(workspace: Path, *args: str) -> dict[str, dict]:
    """`course check ARGS --json` in `workspace`: each exercise's result by name."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("COURSE_")}
    done = subprocess.run([str(COURSE_BIN), "check", *args, "--workspace", str(workspace), "--json", "--course",
                           str(COURSE_DIR)], cwd=workspace.parent, env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.stdout.strip(), done.stderr[-2000:]
    return {e["name"]: e for e in json.loads(done.stdout)["exercises"]}


def _strays(token: str) -> list[int]:
    """Processes whose command line holds `token`."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and token.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _end(pids: list[int]) -> None:
    """Kill what a failed test left behind."""
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("how", ["check", "check --all"])
def test_a_process_that_keeps_replacing_itself_ends_with_the_grading(tmp_path: Path, how: str) -> None:
    """A chain of forks in a new session, each exiting once its successor runs, is gone when `course check`
    returns, cold (`check`) or forked from the warm worker (`check --all`), and the verdict is the file's."""
    token = f"chain{uuid.uuid4().hex}"
    workspace = tmp_path / "ws"
    _write(workspace, "fork_chain_escape", token)
    _write(workspace, "solution_array", token, "exercises/02_double_array/double_array.py")
    try:
        results = _check(workspace, *how.split()[1:], *([] if "--all" in how else ["double"]))
        assert results["double"]["status"] == "passed", results["double"]["message"]
        left = _strays(token)
        if CONTAINED:
            assert left == [], "a process outlived its grading"
    finally:
        _end(_strays(token))


def test_a_child_cannot_read_the_grading_processs_memory(tmp_path: Path) -> None:
    """A plain Python child of the learner's code cannot read the memory of the grading process (which holds
    the key): it is non-dumpable and, where namespaces exist, nothing in its namespace holds a capability.
    The attack returns a wrong value when the read works, so a pass means the memory stayed out of reach.
    As root without namespaces, root's capability reads any process: that setting is said to be weaker."""
    workspace = tmp_path / "ws"
    _write(workspace, "child_reads_memory", uuid.uuid4().hex)
    result = _check(workspace, "double")["double"]
    protected = CONTAINED or os.geteuid() != 0
    assert result["status"] == ("passed" if protected else "failed"), result["message"]


def test_a_host_process_keeps_its_own_children(tmp_path: Path) -> None:
    """Grading from inside a host process (as `course.check()` in a notebook does) ends the grading's own
    processes and never touches the host's: children the host started before and during the grading are
    still running afterwards, and the host's `wait()` sees them end when it ends them."""
    course = load_course(COURSE_DIR)
    exercise = course.get("double")
    token = f"host{uuid.uuid4().hex}"
    submission = _write(tmp_path / "ws", "fork_chain_escape", token)
    before = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    during: list[subprocess.Popen] = []

    def start_during() -> None:
        """A host child born while the grading runs (the sweep of old took those too)."""
        time.sleep(0.5)
        during.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"]))

    import threading

    starter = threading.Thread(target=start_during)
    starter.start()
    try:
        result = runner.grade(exercise, submission)
        starter.join()
        assert result.status == "passed", result.message
        for child in (before, *during):
            assert child.poll() is None, "the grading ended a process of its host"
            child.kill()
            assert child.wait(timeout=30) == -signal.SIGKILL
        if CONTAINED:
            assert _strays(token) == []
    finally:
        for child in (before, *during):
            if child.poll() is None:
                child.kill()
        _end(_strays(token))
