"""What every grading process gets where the kernel allows it: its processes kept in, its privileges kept down.

Stdlib only, and Linux only (each step says when it cannot be had): `sandbox.py`, which is run by
path before a cold grading starts, loads this file by path too; the warm worker's forked child
calls it directly.

- **Processes kept in.** Before it runs anything, the grading makes a new PID namespace (inside a
  user namespace of its own, so no privilege is needed) and goes on as its first process, with a
  /proc of its own; the process that made it waits outside and ends as the grading ends. Every
  process the grading then starts, and every process those start, double-forked or in a new
  session, lives in that namespace and cannot leave it; when a namespace's first process dies,
  the kernel kills every other process in it. So nothing a grading started outlives it, and
  nothing outside it is touched (a Jupyter kernel's own children, say). A process whose
  children go to another PID namespace cannot start threads, hence the grading moves in itself.
- **Privileges kept down.** `no_new_privs` (no set-uid program gives anything back), the new user
  namespace (a root grading keeps no capability over the machine's files and processes), and in
  batch grading as root, a user of its own (`drop_to`) before anything else.
- **No Unix sockets** (batch grading): a seccomp filter refuses `socket(AF_UNIX, ...)`, so a
  submission cannot connect to a pathname socket of the instructor's (tmux, an ssh agent,
  `systemd --user`, docker), which Landlock does not cover. Socket pairs stay allowed.
"""

from __future__ import annotations

import ctypes
import os
import platform
import signal
import struct

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x00020000, 0x10000000, 0x20000000, 0x40000000
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC, _MS_REC, _MS_PRIVATE = 0x2, 0x4, 0x8, 0x4000, 0x40000
_LOST = 70
_PR_CAPBSET_DROP, _CAP_VERSION_3, _EINVAL = 24, 0x20080522, 22
INNER_ROOT = 1000
"""The uid and gid root has inside a grading's user namespace."""
"""Exit code of an outer process whose grading it lost track of."""
_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE, _PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 1, 4, 38, 22, 2
_AF_UNIX, _EACCES, _ENOSYS = 1, 13, 38
_ARCHES = {"x86_64": (0xC000003E, 41, 0x40000000 | 41), "aarch64": (0xC00000B7, 198, 198)}
"""Per machine: the audit architecture, socket(2)'s number, and its number for the x32 ABI (or again)."""


def _libc() -> ctypes.CDLL:
    """The C library, for unshare, prctl and errno."""
    return ctypes.CDLL(None, use_errno=True)


def _fail(what: str) -> OSError:
    """An OSError naming the step and the error the kernel gave."""
    err = ctypes.get_errno()
    return OSError(err, f"{what} failed: {os.strerror(err)}")


def unshare(flags: int) -> None:
    """Enter new namespaces. With a new user namespace, keep our own uid and gid inside it, except
    root's: root becomes INNER_ROOT there, still owning what root owns, but never uid 0, which would
    give every program it runs every capability in the namespace (to read a sibling's memory, say)."""
    uid, gid = os.getuid(), os.getgid()
    if _libc().unshare(flags) != 0:
        raise _fail("unshare")
    if flags & CLONE_NEWUSER:
        inner_uid, inner_gid = uid or INNER_ROOT, gid or INNER_ROOT
        for name, text in (("uid_map", f"{inner_uid} {uid} 1"), ("setgroups", "deny"),
                           ("gid_map", f"{inner_gid} {gid} 1")):
            fd = os.open(f"/proc/self/{name}", os.O_WRONLY)  # bytes: no codec to load, whoever we are now
            try:
                os.write(fd, text.encode())
            finally:
                os.close(fd)


def drop_capabilities() -> None:
    """Give up every capability this process holds in its user namespace, and the means to get one
    back: the bounding set is emptied, so no program it runs gains any."""
    libc = _libc()
    for cap in range(64):
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() == _EINVAL:
            break  # past the last capability this kernel knows
    header = struct.pack("Ii", _CAP_VERSION_3, 0)
    data = bytes(24)  # two (effective, permitted, inheritable) triples, all empty
    if libc.capset(header, data) != 0:
        raise _fail("capset")


def keep_processes_in(*, own_user: bool) -> None:
    """Continue as the first process of a new PID namespace (and mount namespace, with its own /proc),
    so that every process started from here on ends with it; the calling process stays outside,
    waits, and ends as its child ends (it never returns). `own_user`: make a user namespace too
    (needed without privilege; already done when joining or making one for the network)."""
    unshare(CLONE_NEWPID | CLONE_NEWNS | (CLONE_NEWUSER if own_user else 0))
    parent = os.getpid()
    child = os.fork()
    if child:
        _wait_and_mirror(child)
    libc = _libc()
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0 or os.getppid() not in (0, parent):
        os._exit(_LOST)  # the outer process died before the line above took effect
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)  # nothing mounted here is seen outside
    _mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)  # pids as this namespace sees them


PRIVATE_DIRS = ("/tmp", "/var/tmp", "/run", "/dev/shm", "/home", "/root")
"""Folders a batch grading sees empty (a fresh tmpfs each), but for the paths its policy names: no
socket, file or runtime folder of the instructor's is there to find."""
_MS_BIND = 0x1000


def private_dirs(hide: tuple[str, ...], keep: tuple[str, ...]) -> None:
    """In this process's own mount namespace, put a fresh tmpfs over each folder of `hide`, then bind
    back every path of `keep` that lies beneath one (the grading's work folder, its submission, the
    Python it runs), at the same path. A folder that is itself, or lies beneath, a kept path stays."""
    kept = [os.path.abspath(k) for k in keep if k and os.path.exists(k)]
    for folder in hide:
        if not os.path.isdir(folder) or os.path.islink(folder) or any(_beneath(folder, k) for k in kept):
            continue
        under = sorted({k for k in kept if _beneath(k, folder) and k != folder})
        under = [k for k in under if not any(_beneath(k, o) and k != o for o in under)]  # outermost only
        fds = {k: _open_path(k) for k in under}
        _mount("tmpfs", folder, "tmpfs", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
        os.chmod(folder, 0o1777)
        for path, fd in ((p, f) for p, f in fds.items() if f >= 0):
            if os.path.isdir(f"/proc/self/fd/{fd}"):
                os.makedirs(path, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
            _mount(f"/proc/self/fd/{fd}", path, None, _MS_BIND | _MS_REC)
            os.close(fd)


def _open_path(path: str) -> int:
    """An O_PATH descriptor of `path`, or -1 when this user cannot reach it (it could not read it anyway)."""
    try:
        return os.open(path, os.O_PATH | (os.O_DIRECTORY if os.path.isdir(path) else 0))
    except OSError:
        return -1


def _beneath(path: str, folder: str) -> bool:
    """True when `path` is `folder` or lies beneath it."""
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _mount(source: str | None, target: str, kind: str | None, flags: int) -> None:
    """mount(2), raising OSError on failure."""
    mount = _libc().mount
    mount.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p)
    encoded = [s.encode() if s is not None else None for s in (source, target, kind)]
    if mount(*encoded, flags, None) != 0:
        raise _fail(f"mount({target})")


def _wait_and_mirror(child: int) -> None:
    """Outside the namespace: hold nothing, wait for `child`, then end the way it ended. The request for
    the grading's stacks (SIGUSR1) is passed on; other signals meant for the grading must not end us
    first (the kill that ends a grading is SIGKILL to its whole group, this process included)."""
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    signal.signal(signal.SIGUSR1, lambda *_: os.kill(child, signal.SIGUSR1))
    os.closerange(0, 1 << 16)
    code = _LOST
    try:
        while True:
            try:
                _, status = os.waitpid(child, 0)
                break
            except InterruptedError:
                continue
        code = os.waitstatus_to_exitcode(status)
        if code < 0:
            if -code not in (signal.SIGKILL, signal.SIGSTOP):  # those two keep their default and cannot be set
                signal.signal(-code, signal.SIG_DFL)
            os.kill(os.getpid(), -code)
    finally:
        os._exit(code if code >= 0 else _LOST)


def no_new_privileges() -> None:
    """No program this process runs can gain a privilege (set-uid bits and file capabilities are ignored)."""
    if _libc().prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise _fail("prctl(no_new_privs)")


def drop_to(uid: int, gid: int) -> None:
    """Become `uid`:`gid` with no supplementary groups; from root, every capability goes with it."""
    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    if os.getuid() != uid or os.geteuid() != uid:
        raise OSError(1, f"the grading could not become uid {uid}")
    # A change of uid makes the process non-dumpable, which leaves its /proc files root's: the user
    # namespace it makes next could not be mapped. The grading process goes non-dumpable again itself.
    _libc().prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)


def python_readable(extra: tuple[str, ...] = ()) -> None:
    """Raise OSError unless this (dropped) user can run Python: its standard library, `course` itself and the
    `extra` folders gradings import from. An interpreter under root's home (pyenv in /root, say) is not:
    gradings there stay root."""
    stdlib = os.path.dirname(os.__file__)
    for path in (stdlib, os.path.join(stdlib, "encodings"), os.path.dirname(os.path.abspath(__file__)), *extra):
        os.listdir(path)
    with open(os.__file__, "rb"):
        pass


def refuse_unix_sockets() -> None:
    """A seccomp filter: `socket(AF_UNIX, ...)` fails with EACCES; other machine ABIs get nothing at all."""
    refuse_sockets(_AF_UNIX, _EACCES)


def refuse_sockets(family: int, error: int) -> None:
    """A seccomp filter: `socket(family, ...)` fails with `error` in this process and every process it starts
    (as a machine that has no such sockets says: EAFNOSUPPORT for AF_INET in a sandbox without IP, say); other
    machine ABIs get nothing at all."""
    arch = _ARCHES.get(platform.machine())
    if arch is None:
        raise OSError(_ENOSYS, f"no seccomp filter is known for {platform.machine()}")
    audit, number, x32 = arch
    ld, jeq, ret = 0x20, 0x15, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, BPF_RET|K
    allow, refuse, other_abi = 0x7FFF0000, 0x00050000 | error, 0x00050000 | _ENOSYS
    program = [
        (ld, 0, 0, 4),  # the architecture
        (jeq, 1, 0, audit),
        (ret, 0, 0, other_abi),
        (ld, 0, 0, 0),  # the system call's number
        (jeq, 2, 0, number),
        (jeq, 1, 0, x32),
        (ret, 0, 0, allow),
        (ld, 0, 0, 16),  # its first argument's low half: the address family
        (jeq, 0, 1, family),
        (ret, 0, 0, refuse),
        (ret, 0, 0, allow),
    ]
    code = b"".join(struct.pack("HBBI", *op) for op in program)
    buf = ctypes.create_string_buffer(code, len(code))
    prog = struct.pack("HxxxxxxP", len(program), ctypes.addressof(buf))
    prog_buf = ctypes.create_string_buffer(prog, len(prog))
    prctl = _libc().prctl
    prctl.argtypes = (ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong)
    if prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.addressof(prog_buf), 0, 0) != 0:
        raise _fail("prctl(seccomp)")
