"""The fork server inside a warm worker: imports what graders need, then forks one grading per request.

Forking is safe only while no JAX backend has started here (the child of a process with live
JAX threads deadlocks), so this process never runs JAX code: it imports, then waits. Each
grading child becomes what a cold `python -I -m pytest` run is: its own session and process
group, a folder the learner does not control, the grading environment (the device count is
read when the child's backend starts), the memory cap, stdout and stderr on the output pipe,
the key on fd 3, the events pipe on fd 4, a split grading's link on fd 5, the go pipe
(`course.engine.wire.gate`) on fd 6; then `pytest.main` with the cold command's arguments.
`course.engine.parent.worker` is the course side and describes the protocol.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import json
import os
import selectors
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from course.engine.contain import sandbox, system
from course.engine.parent import isolation, tree
from course.engine.parent.warmup import _unsafe, _warm_up

FD_NAMES = ("keyfd", "eventsfd", "linkfd", "gofd")
"""The descriptors a grading receives besides its output, at 3, 4, ... in the child, in this order."""
FIRST_FD = 3
MAX_MESSAGE = 1 << 20
POLL_S = 0.01
_EXITED = object()
"""What the selector holds beside a child's exit descriptor."""


def send(sock: socket.socket, message: dict[str, Any]) -> None:
    """One JSON message; a peer that has gone away is not our problem here."""
    with contextlib.suppress(OSError):
        sock.send(json.dumps(message).encode())


@dataclass
class _Grading:
    """One forked grading process and the socket its `course` thread waits on."""

    pid: int
    sock: socket.socket
    reported: bool = False
    exit_fd: int | None = None
    """Readable once the child has exited (a pidfd), so its exit is told at once; None: found by polling."""


def serve(ctl_fd: int) -> None:
    """The worker's life: import, report ready, then fork gradings until the control socket closes."""
    ctl = socket.socket(fileno=ctl_fd)
    reason = _warm_up()
    # Every object the warm-up made lives as long as the worker: out of the collector's sight, a
    # child's collections no longer walk them and write to them, so their pages stay shared instead
    # of being copied into every grading (about an eighth of a grading's CPU time).
    gc.collect()
    gc.freeze()
    send(ctl, {"ready": not reason, "reason": reason, "pid": os.getpid()})
    if reason:
        return
    system.become_subreaper()  # escaped grandchildren come back to us to be killed
    gradings: dict[int, _Grading] = {}
    sel = selectors.DefaultSelector()
    sel.register(ctl, selectors.EVENT_READ)
    try:
        while True:
            for key, _ in sel.select(POLL_S if gradings else None):
                if key.data is _EXITED:
                    continue  # a child has exited: told below
                if key.fileobj is not ctl:
                    _finish(key.data, sel, gradings)  # "release", or its `course` thread is gone
                elif not _on_control(ctl, sel, gradings):
                    return
            _report_exits(gradings, sel)
    finally:
        for grading in list(gradings.values()):
            _finish(grading, sel, gradings)


def _on_control(ctl: socket.socket, sel: selectors.BaseSelector, gradings: dict[int, _Grading]) -> bool:
    """Serve one control message; False when `course` has closed the socket."""
    try:
        data, fds, _flags, _addr = socket.recv_fds(ctl, MAX_MESSAGE, 2 + len(FD_NAMES))
    except OSError:
        return False
    request = json.loads(data) if data else {}
    if request.get("op") == "launch" and len(fds) == 2 + len(FD_NAMES):
        _launch(request, fds, sel, gradings)
        return True
    for fd in fds:
        os.close(fd)
    if request.get("op") == "status":
        from jax._src import xla_bridge

        backends = sorted(getattr(xla_bridge, "_backends", {}))
        send(ctl, {"pid": os.getpid(), "backends": backends, "threads": threading.active_count(),
                   "frozen": gc.get_freeze_count(), "plugins": bool(getattr(xla_bridge, "_plugins_registered", 0))})
    return bool(data)


def _launch(request: dict[str, Any], fds: list[int], sel: selectors.BaseSelector, gradings: dict) -> None:
    """Fork one grading and tell its `course` thread the pid (or why not)."""
    sock_fd, out_fd, *passed = fds
    sock = socket.socket(fileno=sock_fd)
    unsafe = _unsafe()
    problem = unsafe or _env_problem(request.get("env", {}))
    pid = 0
    if not problem:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(request, out_fd, passed)
    for fd in (out_fd, *passed):
        os.close(fd)
    if problem:
        send(sock, {"error": problem, "fatal": bool(unsafe)})
        sock.close()
        return
    gradings[pid] = _Grading(pid, sock, exit_fd=system.exit_fd(pid))
    sel.register(sock, selectors.EVENT_READ, gradings[pid])
    if gradings[pid].exit_fd is not None:
        sel.register(gradings[pid].exit_fd, selectors.EVENT_READ, _EXITED)
    send(sock, {"pid": pid})


# Settings of JAX's compilation cache: read at the first compile, not at import, so a child
# applies its own (each workspace keeps its cache) and they never force a cold run.
_CACHE_SETTINGS = {
    "JAX_COMPILATION_CACHE_DIR": ("jax_compilation_cache_dir", str, None),
    "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": ("jax_persistent_cache_min_compile_time_secs", float, 1.0),
    "JAX_COMPILATION_CACHE_MAX_SIZE": ("jax_compilation_cache_max_size", int, -1),
}


def _env_problem(env: dict[str, str]) -> str:
    """JAX reads JAX_* variables at import, so a grading that wants others must run cold."""
    names = {k for k in (*env, *os.environ) if k.startswith("JAX_") and k not in _CACHE_SETTINGS}
    differ = sorted(k for k in names if env.get(k) != os.environ.get(k))
    return f"the grading needs other JAX settings ({', '.join(differ)})" if differ else ""


def _child(request: dict[str, Any], out_fd: int, passed: list[int]) -> NoReturn:
    """In the forked child: become a cold grading process, run pytest, and never return."""
    code = 70
    try:
        parent = os.getppid()
        os.setsid()
        system.die_with_parent()
        if os.getppid() != parent:  # the worker died before the line above took effect
            os._exit(code)
        _wire_fds(out_fd, passed)
        system.cap_memory(os.getpid(), int(request["memory_mb"]))
        os.chdir(request["cwd"])
        os.environ.clear()  # XLA reads XLA_FLAGS (the device count) when the backend starts
        os.environ.update(request["env"])
        _apply_cache_settings(request["env"])
        _reseed()
        sandbox.enter(request.get("sandbox"))  # last: everything above needs what it forbids
        import pytest

        numbers = {name: FIRST_FD + i for i, name in enumerate(FD_NAMES)}
        args = [isolation.fill(a, numbers) for a in request["args"]]
        sys.argv = [str(Path(pytest.__file__).with_name("__main__.py")), *args]
        code = int(pytest.main(args))
    except BaseException:  # noqa: B036 - whatever happens, this process must end here
        import traceback

        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def _apply_cache_settings(env: dict[str, str]) -> None:
    """Give this grading the compilation-cache settings its environment asks for."""
    import jax

    for var, (option, kind, default) in _CACHE_SETTINGS.items():
        jax.config.update(option, kind(env[var]) if var in env else default)


def _wire_fds(out_fd: int, passed: list[int]) -> None:
    """stdin from /dev/null, stdout and stderr to the output pipe, the passed fds from 3 up, nothing else."""
    devnull = os.open(os.devnull, os.O_RDONLY)
    # Move everything above the target numbers first, so no dup2 overwrites a source.
    src_in, src_out, *srcs = (fcntl.fcntl(fd, fcntl.F_DUPFD, 64) for fd in (devnull, out_fd, *passed))
    targets = [(src_in, 0), (src_out, 1), (src_out, 2), *((s, FIRST_FD + i) for i, s in enumerate(srcs))]
    for src, dest in targets:
        os.dup2(src, dest)
    # Other gradings' pipes and the control socket must not leak into learner code.
    os.closerange(FIRST_FD + len(srcs), os.sysconf("SC_OPEN_MAX"))


def _reseed() -> None:
    """Forked children would share the worker's random state; a cold process draws its own."""
    import random

    random.seed()
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()


def _report_exits(gradings: dict[int, _Grading], sel: selectors.BaseSelector) -> None:
    """Tell each waiting `course` thread its child's exit code; keep the zombie until released."""
    for grading in gradings.values():
        if grading.reported:
            continue
        try:
            info = os.waitid(os.P_PID, grading.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            info = None
            grading.reported = True
        if info is not None:
            grading.reported = True
            code = info.si_status if info.si_code == os.CLD_EXITED else -info.si_status
            send(grading.sock, {"exit": code})
        if grading.reported:
            _close_exit_fd(grading, sel)


def _close_exit_fd(grading: _Grading, sel: selectors.BaseSelector) -> None:
    """Stop watching for the child's exit (a pidfd stays readable once it has happened)."""
    if grading.exit_fd is not None:
        sel.unregister(grading.exit_fd)
        os.close(grading.exit_fd)
        grading.exit_fd = None


def _finish(grading: _Grading, sel: selectors.BaseSelector, gradings: dict[int, _Grading]) -> None:
    """Kill the grading's group, reap the child, and kill anything that escaped it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(grading.pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(grading.pid, 0)
    sel.unregister(grading.sock)
    grading.sock.close()
    _close_exit_fd(grading, sel)
    del gradings[grading.pid]
    deadline = time.monotonic() + tree.SWEEP_S
    while time.monotonic() < deadline and _sweep(set(gradings)):
        time.sleep(POLL_S)


def _sweep(active: set[int]) -> bool:
    """Kill and reap our children that are no running grading: the worker starts nothing else."""
    return system.kill_children(lambda p: p.pid not in active)


if __name__ == "__main__":
    serve(int(sys.argv[1]))
