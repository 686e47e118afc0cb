"""Confine one grading process: no network, files limited to what grading needs, no reach into other gradings.

Two Linux features, each used where the kernel gives it without root:

- a new user and network namespace (`unshare`): the process keeps its own uid but sees only a
  loopback that is down, so it can open no connection and reach no listener on the machine;
- Landlock (kernel 5.13 and later): reading is limited to the Python installation, the system's
  libraries, the exercise's grader folder and the one submitted file's private folder; writing
  to the grading's own work folder. From Landlock ABI 4, TCP connect and bind are refused too;
  from ABI 6, signals and abstract Unix sockets cannot reach processes outside the sandbox; at
  every ABI, a sandboxed process cannot ptrace (nor read the memory of) one outside its own.

A grading that runs in several processes (`course.engine.parent.cohort`) needs them to talk to each other
and to nothing else: a *private loopback*. One holder process makes the user and network namespace
and brings its `lo` up (the namespace's owner may); each grading process joins that namespace
instead of making its own, and keeps Landlock's file rules without its TCP rules (`Policy.loopback`).
When a root `course` grades as a user of its own, the holder becomes that user first, so that the
namespace is the grading processes' own to join.

Every grading, sandboxed or not, is also contained where the kernel allows (`course.engine.contain.contain`,
which this file loads): its processes in a PID namespace that ends with it, no privilege to gain,
a user of its own when `course` runs as root, and no Unix sockets in batch grading.

`Policy` says what one grading may touch; `enter` applies it to the calling process, which
must be single-threaded (a forked child, or the start of a fresh one); `wrap` prefixes a cold
command with this file run by path (stdlib only, `python -I -S`), which enters the sandbox and
then executes the command. `course.engine.contain.protections` probes which protections this machine
gives and makes each grading's policy.
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import sys
import types
from dataclasses import asdict, dataclass, replace

_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446  # the same on every architecture
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
_CLONE_NEWUSER, _CLONE_NEWNET = 0x10000000, 0x40000000
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP, _IFF_RUNNING = 0x8913, 0x8914, 0x1, 0x40
_IFREQ = "16sh22x"  # struct ifreq: the interface's name, its flags, and the rest of the union
# Landlock file-system rights, and the ABI that introduced each one after the first thirteen.
_FS_BASE = (1 << 13) - 1
_FS_LATER = {2: 1 << 13, 3: 1 << 14, 5: 1 << 15}  # refer, truncate, ioctl on devices
_READ = (1 << 0) | (1 << 2) | (1 << 3)  # execute, read a file, read a folder
_FILE_ONLY = (1 << 0) | (1 << 1) | (1 << 2) | (1 << 14) | (1 << 15)  # rights that apply to a file itself
_NET_TCP = (1 << 0) | (1 << 1)  # bind and connect (ABI 4)
_SCOPES = (1 << 0) | (1 << 1)  # abstract Unix sockets and signals (ABI 6)
FAILED_EXIT = 71
"""Exit code of a process that could not enter the sandbox it was asked for."""


class SandboxError(OSError):
    """A protection that was asked for could not be applied."""


@dataclass(frozen=True)
class Policy:
    """What one grading process may touch: folders to read, folders to write, and the network (never)."""

    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()
    namespace: bool = True
    landlock_abi: int = 0
    tmpdir: str = ""
    """Where temporary files go (the work folder): TMPDIR and `tempfile.tempdir` point there."""
    loopback: bool = False
    """TCP allowed (no Landlock network rules): for processes that talk over a private loopback."""
    join: int = 0
    """The pid of a namespace holder (`hold`) whose user and network namespace to join, instead of new ones."""
    processes: bool = False
    """Every process the grading starts lives in a PID namespace that ends with it (`course.engine.contain.contain`)."""
    unix_sockets: bool = True
    """False: `socket(AF_UNIX)` is refused (no connection to a pathname socket of the instructor's)."""
    user: int = -1
    """When the grading runs as root: the uid (and `group`) it becomes before anything else; -1: stay."""
    group: int = -1
    private: bool = False
    """Batch grading: `/tmp`, `/run`, `/dev/shm` and the home folders are empty there but for the
    policy's own paths (`contain.private_dirs`); needs `processes` (its mount namespace)."""

    def on_loopback(self, holder: int) -> Policy:
        """This policy for one of several processes that share the private loopback of `holder` (0: none)."""
        return replace(self, loopback=True, join=holder, namespace=self.namespace and holder == 0)

    def to_json(self) -> str:
        """The policy as one JSON string, for a command line or a worker request."""
        return json.dumps(asdict(self))

    @classmethod
    def from_data(cls, data: dict | str) -> Policy:
        """The policy from `to_json`'s string or its parsed dict."""
        raw = json.loads(data) if isinstance(data, str) else data
        return cls(tuple(raw["read"]), tuple(raw["write"]), bool(raw["namespace"]), int(raw["landlock_abi"]),
                   str(raw.get("tmpdir", "")), bool(raw.get("loopback", False)), int(raw.get("join", 0)),
                   bool(raw.get("processes", False)), bool(raw.get("unix_sockets", True)),
                   int(raw.get("user", -1)), int(raw.get("group", -1)), bool(raw.get("private", False)))


# ---- inside the grading process -------------------------------------------------------------


@functools.cache
def _libc() -> ctypes.CDLL:
    """The C library, for syscall, prctl and unshare."""
    return ctypes.CDLL(None, use_errno=True)


def _fail(what: str) -> SandboxError:
    """A SandboxError naming the step and the error the kernel gave."""
    err = ctypes.get_errno()
    return SandboxError(err, f"{what} failed: {os.strerror(err)}")


def landlock_abi() -> int:
    """The Landlock ABI version the kernel offers, 0 when it has none."""
    try:
        version = _libc().syscall(_SYS_CREATE_RULESET, None, 0, _CREATE_RULESET_VERSION)
    except (AttributeError, OSError):
        return 0
    return max(int(version), 0)


def _new_namespaces() -> None:
    """A new user and network namespace, keeping our own uid and gid inside it."""
    _contain().unshare(_CLONE_NEWUSER | _CLONE_NEWNET)


@functools.cache
def _contain() -> types.ModuleType:
    """`course.engine.contain.contain`, imported, or loaded by path when this file runs by path (`python -I -S`)."""
    try:
        from course.engine.contain import contain
    except ImportError:
        import importlib.util

        spec = importlib.util.spec_from_file_location(
            "_course_contain", os.path.join(os.path.dirname(os.path.abspath(__file__)), "contain.py"))
        assert spec is not None and spec.loader is not None
        contain = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(contain)
    return contain


def _loopback_up() -> None:
    """Bring up `lo` in this (new) network namespace, as its owner may."""
    import fcntl
    import socket
    import struct

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        flags = struct.unpack(_IFREQ, fcntl.ioctl(sock, _SIOCGIFFLAGS, struct.pack(_IFREQ, b"lo", 0)))[1]
        fcntl.ioctl(sock, _SIOCSIFFLAGS, struct.pack(_IFREQ, b"lo", flags | _IFF_UP | _IFF_RUNNING))


def _join_namespaces(holder: int) -> None:
    """Join the user, then the network namespace of the holder process `holder` (`hold`)."""
    fds = [(os.open(f"/proc/{holder}/ns/{name}", os.O_RDONLY | os.O_CLOEXEC), flag, name)
           for name, flag in (("user", _CLONE_NEWUSER), ("net", _CLONE_NEWNET))]
    try:
        for fd, flag, name in fds:
            if _libc().setns(fd, flag) != 0:
                raise _fail(f"setns({name})")
    finally:
        for fd, _, _ in fds:
            os.close(fd)


class _RulesetAttr(ctypes.Structure):
    """`struct landlock_ruleset_attr`: what the ruleset handles (files, TCP, scopes)."""

    _fields_ = (("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64))  # fmt: skip


class _PathBeneath(ctypes.Structure):
    """`struct landlock_path_beneath_attr` (packed): rights allowed beneath an open folder or file."""

    _pack_ = 1
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


def _fs_rights(abi: int) -> int:
    """Every file-system right the kernel's ABI knows."""
    return _FS_BASE | sum(bit for since, bit in _FS_LATER.items() if abi >= since)


def _landlock(policy: Policy) -> None:
    """Limit files to the policy, and TCP and signals where the ABI allows, for this process and its children."""
    abi = policy.landlock_abi
    fs = _fs_rights(abi)
    tcp = _NET_TCP if abi >= 4 and not policy.loopback else 0
    attr = _RulesetAttr(fs, tcp, _SCOPES if abi >= 6 else 0)
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    libc = _libc()
    ruleset = libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), size, 0)
    if ruleset < 0:
        raise _fail("landlock_create_ruleset")
    try:
        for paths, rights in ((policy.read, _READ), (policy.write, fs)):
            for path in paths:
                _allow(ruleset, path, rights)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise _fail("prctl(no_new_privs)")
        if libc.syscall(_SYS_RESTRICT_SELF, ruleset, 0) != 0:
            raise _fail("landlock_restrict_self")
    finally:
        os.close(ruleset)


def _allow(ruleset: int, path: str, rights: int) -> None:
    """Allow `rights` beneath `path` (on a file, only the rights a file can have); a missing path is skipped."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return
    try:
        if not os.path.isdir(path):
            rights &= _FILE_ONLY
        rule = _PathBeneath(rights, fd)
        if _libc().syscall(_SYS_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), 0) != 0:
            raise _fail(f"landlock_add_rule({path})")
    finally:
        os.close(fd)


def enter(policy: Policy | dict | str | None) -> None:
    """Confine the calling (single-threaded) process by `policy`; raise SandboxError if any part fails."""
    if policy is None:
        return
    policy = policy if isinstance(policy, Policy) else Policy.from_data(policy)
    if policy.tmpdir:
        os.environ["TMPDIR"] = policy.tmpdir
        if "tempfile" in sys.modules:
            sys.modules["tempfile"].tempdir = policy.tmpdir  # it may have chosen /tmp already
    contain = _contain()
    if policy.user >= 0 and os.geteuid() == 0:
        contain.drop_to(policy.user, policy.group)  # first: every step below then runs unprivileged
        os.environ["HOME"] = policy.tmpdir or "/"  # root's home is not this user's to read
    if policy.join:
        _join_namespaces(policy.join)
    elif policy.namespace:
        _new_namespaces()
    if policy.processes:
        contain.keep_processes_in(own_user=not (policy.join or policy.namespace))
        if policy.private:  # before Landlock, which refuses mounts
            contain.private_dirs(contain.PRIVATE_DIRS, (*policy.read, *policy.write, policy.tmpdir, os.getcwd()))
    contain.no_new_privileges()
    if policy.landlock_abi:
        _landlock(policy)
    if not policy.unix_sockets:
        contain.refuse_unix_sockets()
    if policy.processes or policy.namespace or policy.join:
        contain.drop_capabilities()  # those a new user namespace gave; the programs it runs get none


def wrap(command: list[str], policy: Policy) -> list[str]:
    """A cold command that enters the sandbox first: this file, run by path, then `exec` of `command`."""
    return [sys.executable, "-I", "-S", os.path.abspath(__file__), policy.to_json(), "--", *command]


def _hold(uid: int = -1, gid: int = -1) -> int:
    """`--hold [UID GID]`: make a namespace with its loopback up, say "ready", and keep it until stdin closes.
    Given a uid (when root), become that user first: the namespace is then that user's, as the grading
    processes that join it are (a root-owned one is not theirs to open: `/proc/PID/ns/user` refuses them)."""
    try:
        if uid >= 0 and os.geteuid() == 0:
            _contain().drop_to(uid, gid)
        _new_namespaces()
        _loopback_up()
    except OSError as exc:
        sys.stderr.write(f"course: the private loopback could not be made: {exc}\n")
        return FAILED_EXIT
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    sys.stdin.buffer.read()
    return 0


def _probe(uid: int = -1, gid: int = -1, *imports: str) -> int:
    """`--probe [UID GID [FOLDER...]]`: say which protections this machine gives, one word a line, each tried in
    a child of its own; with a uid (when root), whether Python still runs as that user ("user"), reading the
    FOLDERs gradings import from besides its own."""
    tries = {"namespace": _new_namespaces, "processes": lambda: _contain().keep_processes_in(own_user=True),
             "seccomp": lambda: (_contain().no_new_privileges(), _contain().refuse_unix_sockets())}
    if uid >= 0:
        tries["user"] = lambda: (_contain().drop_to(uid, gid), _contain().python_readable(imports))
    for word, attempt in tries.items():
        pid = os.fork()
        if pid == 0:
            try:
                attempt()
            except OSError:
                os._exit(1)
            os._exit(0)
        if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0:
            sys.stdout.write(word + "\n")
    sys.stdout.flush()
    return 0


def _main(argv: list[str]) -> int:
    """`--probe [UID GID [FOLDER...]]`: say what this machine gives; `--hold [UID GID]`: keep a private loopback;
    `POLICY -- COMMAND...`: enter the sandbox, then become COMMAND."""
    if argv[:1] == ["--hold"]:
        return _hold(*(int(a) for a in argv[1:3]))
    if argv[:1] == ["--probe"]:
        return _probe(*(int(a) for a in argv[1:3]), *argv[3:])
    if len(argv) < 3 or argv[1] != "--":
        sys.stderr.write("usage: sandbox.py POLICY_JSON -- COMMAND...\n")
        return 2
    try:
        enter(argv[0])
    except OSError as exc:
        sys.stderr.write(f"course: the grading sandbox could not be entered: {exc}\n")
        return FAILED_EXIT
    try:
        os.execv(argv[2], argv[2:])
    except OSError as exc:
        sys.stderr.write(f"course: the grading could not start inside its sandbox: {exc}\n")
    return FAILED_EXIT


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
