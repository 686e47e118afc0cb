"""The course side of the warm worker: a process with JAX, Pallas and pytest imported that forks gradings.

A cold grading pays for importing JAX and pytest every time; the worker (`course.engine.parent.forkserver`)
pays once and forks a child per grading that is set up exactly as a cold run. `course.engine.parent.isolation`
still owns the timeout, the group kill (by the child's pid, which is its group id and stays
reserved until we release it) and the caps; the runner still takes the verdict from the signed
report. Used by `course watch` and by `course check` when it grades several exercises.

Protocol, one JSON message per packet on Unix SEQPACKET sockets:
  control, course -> worker: {"op": "launch", ...} carrying a per-grading socket, the output
    pipe and the grading's own fds (`forkserver.FD_NAMES`), or {"op": "status"}; closing it stops the worker.
  control, worker -> course: {"ready": bool, "reason": str} once, then one reply per status (its pid, the
    JAX backends and threads it runs, the objects it froze, whether JAX's plugins were looked for).
  per grading, worker -> course: {"pid": n} or {"error": why}, later {"exit": code}; course ->
    worker: b"release" (or closing it): the worker kills the group, reaps the child, sweeps orphans.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import socket
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

from course.engine.parent import invocation, tree
from course.engine.parent.forkserver import FD_NAMES, MAX_MESSAGE

READY_TIMEOUT_S = 120.0
LAUNCH_TIMEOUT_S = 30.0


class Worker:
    """The course side of a warm worker: starts it, asks it to fork gradings, stops it."""

    def __init__(self, env: dict[str, str]) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            # Its own session: a Ctrl-C meant for `course` must not kill it mid-grading.
            self._proc = tree.start_helper(
                [*invocation.python_module("course.engine.parent.forkserver"), str(theirs.fileno())],
                env=env,
                cwd=tempfile.gettempdir(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                pass_fds=(theirs.fileno(),),
                start_new_session=True,
            )
        finally:
            theirs.close()
        self._ctl = ours
        self._lock = threading.Lock()
        self._ready: bool | None = None
        self.reason = ""
        self.launched = 0
        """Gradings forked so far (a grading the worker could not take runs cold and is not counted)."""
        atexit.register(self.close)

    @property
    def pid(self) -> int:
        """The worker's process id."""
        return self._proc.pid

    def ready(self, timeout_s: float = READY_TIMEOUT_S) -> bool:
        """Wait until the worker has imported everything; False when it cannot serve."""
        with self._lock:
            if self._ready is None:
                reply = _receive(self._ctl, timeout_s)
                self._ready, self.reason = bool(reply.get("ready")), str(reply.get("reason", "it did not start"))
            return self._ready and self._proc.poll() is None

    def launch(self, command: list[str], *, fds: dict[str, int], cwd: Path, env: dict[str, str], memory_mb: int,
               sandbox: str | None = None) -> Any:
        """Fork a grading of `command` (a cold pytest command line), confined by `sandbox` if given (a
        `course.engine.contain.sandbox.Policy` as JSON); None when it must run cold."""
        prefix = invocation.python_module("pytest")
        if command[:len(prefix)] != prefix or set(fds) != set(FD_NAMES) or not self.ready():
            return None
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        out_r, out_w = os.pipe()
        request = {"op": "launch", "args": command[len(prefix):], "cwd": str(cwd), "env": env, "memory_mb": memory_mb,
                   "sandbox": sandbox}
        try:
            with self._lock:
                passed = [theirs.fileno(), out_w, *(fds[name] for name in FD_NAMES)]
                socket.send_fds(self._ctl, [json.dumps(request).encode()], passed)
            reply = _receive(ours, LAUNCH_TIMEOUT_S)
        except OSError:
            reply = {}
        finally:
            theirs.close()
            os.close(out_w)
        if "pid" not in reply:
            # Only a worker that is gone or no longer fork-safe is given up; a mismatch is per grading.
            self._ready = self._ready and "error" in reply and not reply.get("fatal")
            self.reason = str(reply.get("error", "it stopped answering"))
            ours.close()
            os.close(out_r)
            if not reply:
                # Silent (a busy machine, or a stuck worker): it may yet fork this grading, which would
                # race the cold run that replaces it. Ending the worker ends any such child with it.
                self._end()
            return None
        self.launched += 1
        return Child(int(reply["pid"]), ours, os.fdopen(out_r, "rb"))

    def status(self) -> dict[str, Any]:
        """What the worker reports about itself: pid, started backends, threads."""
        if not self.ready():
            return {}
        with self._lock:
            self._ctl.send(json.dumps({"op": "status"}).encode())
            return _receive(self._ctl, LAUNCH_TIMEOUT_S)

    def close(self) -> None:
        """Stop the worker; it kills any grading it still runs before it exits."""
        with self._lock, contextlib.suppress(OSError):
            self._ctl.close()
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        tree.forget_helper(self._proc.pid)
        atexit.unregister(self.close)

    def _end(self) -> None:
        """Kill the worker now (its gradings die with it: parent-death signal); later gradings run cold."""
        self._ready = False
        with contextlib.suppress(OSError):
            self._proc.kill()


class Child:
    """A grading process forked by the worker, shaped like a `Popen` for `course.engine.parent.isolation`."""

    def __init__(self, pid: int, sock: socket.socket, stdout: Any) -> None:
        self.pid, self.stdout, self._sock = pid, stdout, sock
        self.returncode: int | None = None

    def wait(self, timeout: float | None = None) -> int:
        """The exit code the worker saw (negative: a signal); raise TimeoutExpired like Popen."""
        if self.returncode is None:
            try:
                reply = _receive(self._sock, timeout, raise_timeout=True)
            except TimeoutError:
                raise subprocess.TimeoutExpired("grading", timeout or 0) from None
            # No reply means the worker died; its children die with it (parent-death signal).
            self.returncode = int(reply.get("exit", -signal.SIGKILL))
        return self.returncode

    def kill(self) -> None:
        """Kill the grading process (still unreaped, so its pid is still its own)."""
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)

    def release(self) -> None:
        """Let the worker reap the child once its group has been killed."""
        with contextlib.suppress(OSError):
            self._sock.send(b"release")
        self._sock.close()


def _receive(sock: socket.socket, timeout: float | None, raise_timeout: bool = False) -> dict[str, Any]:
    """One JSON message, or {} at end of file or on timeout (TimeoutError when asked)."""
    sock.settimeout(timeout)
    try:
        data = sock.recv(MAX_MESSAGE)
    except TimeoutError:
        if raise_timeout:
            raise
        return {}
    except OSError:
        return {}
    return json.loads(data) if data else {}
