"""Helpers the tests import by name (a conftest is pytest's to load, and several share that module name)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures"


def git_commit(folder: Path) -> None:
    """Make `folder` a git checkout with one commit, as a cloned course is."""
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "course"]):
        subprocess.run(["git", "-C", str(folder), *args], check=True, env=env, capture_output=True)


@contextlib.contextmanager
def served(path: Path, source: bytes) -> Iterator[Any]:
    """The learner's module `source`, written at `path` and served by an executor in a thread, as a judge's
    check sees it (`course.engine.judge.remote.RemoteModule`). The strict interpreter the executor makes every
    kernel's default, as a grading does, is this process's no more once the block ends."""
    from jax._src import config

    from course.engine.executor.serve import Executor
    from course.engine.judge import remote

    mode = config.pallas_tpu_interpret_mode_context_manager
    before = mode.get_global()

    path.write_bytes(source)
    judge_end, executor_end = socket.socketpair()
    server = threading.Thread(target=Executor(executor_end, path, source).serve, daemon=True)
    server.start()
    link = remote.Link(judge_end)
    try:
        yield remote.load(link, path)
    finally:
        link.done()
        server.join(timeout=60)
        mode.set_global(before)


def ended(proc: subprocess.Popen, timeout: float) -> int:
    """`proc`'s exit code once it ends (its output read, if piped); past `timeout` seconds (a hang guard, never a
    measure of speed), a failure naming every process still alive below it and what each is blocked in."""
    import pytest

    try:
        proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running {timeout:g} s after it was told to end:\n{process_tree(proc.pid)}")
    return proc.returncode


def process_tree(pid: int) -> str:
    """One line per process from `pid` down: pid, state, the kernel call it waits in, threads, command line."""
    import psutil

    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return f"{pid}: gone"
    lines = []
    for p in procs:
        with contextlib.suppress(psutil.Error, OSError):
            wchan = Path(f"/proc/{p.pid}/wchan").read_text() if Path(f"/proc/{p.pid}/wchan").exists() else "?"
            lines.append(f"{p.pid} (parent {p.ppid()}) {p.status()} in {wchan or '-'}, {p.num_threads()} threads, "
                         f"{_signals(p.pid)}: {' '.join(p.cmdline())[:160]}")
    return "\n".join(lines)


def _signals(pid: int) -> str:
    """Whether SIGINT is ignored, blocked, caught or pending in `pid` (a Ctrl-C that did nothing says why)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return "signals unknown"
    bit = 1 << (2 - 1)  # SIGINT is 2; bit n-1 of each mask
    found = [name for name in ("SigIgn", "SigBlk", "SigCgt", "SigPnd", "ShdPnd")
             for line in status.splitlines() if line.startswith(name + ":") and int(line.split()[1], 16) & bit]
    return "SIGINT " + ("/".join(found) if found else "default")


def default_sigint() -> None:
    """For `preexec_fn`: the child starts with Ctrl-C's default, as from a terminal. A pytest worker can hand its
    children SIGINT ignored (seen in full runs of the suite), and Python then never raises KeyboardInterrupt."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
