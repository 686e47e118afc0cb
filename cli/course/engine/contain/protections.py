"""What a batch of gradings is confined by: which protections this machine gives, and what every grading may read.

The sandbox itself (`course.engine.contain.sandbox`) applies one `Policy` to one process; this module, on the
parent's side, probes the machine once (`available`) and makes each grading's policy (`Confinement`).
`COURSE_PORTABLE=1` turns every protection off, like every Linux-only feature.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import threading
from dataclasses import dataclass, field

from course.engine.contain.sandbox import Policy, landlock_abi

_SANDBOX_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sandbox.py")
SYSTEM_READ = (
    "/usr", "/lib", "/lib64", "/lib32", "/bin", "/proc", "/sys",
    "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/passwd", "/etc/group",
    "/etc/nsswitch.conf", "/etc/hosts", "/etc/host.conf", "/etc/resolv.conf", "/etc/gai.conf",
    "/dev/urandom", "/dev/random",
)  # fmt: skip
"""What any Python process needs to read: libraries, the dynamic loader's files, /proc and /sys."""
SYSTEM_WRITE = ("/dev/null", "/dev/zero")


@dataclass(frozen=True)
class Protections:
    """Which protections this machine gives a grading process."""

    network_namespace: bool = False
    landlock_abi: int = 0
    pid_namespace: bool = False
    """Every process a grading starts lives in a PID namespace that ends with it."""
    seccomp: bool = False
    """Unix sockets can be refused (a seccomp filter)."""
    user: tuple[int, int] | None = None
    """Where `course` runs as root: the unprivileged uid and gid each grading becomes."""

    @property
    def active(self) -> bool:
        """True when any protection is on, so gradings should enter the sandbox."""
        return self.network_namespace or self.landlock_abi > 0 or self.pid_namespace or self.user is not None

    @property
    def landlock_files(self) -> bool:
        """Reading and writing limited to the policy's folders."""
        return self.landlock_abi >= 1

    @property
    def landlock_network(self) -> bool:
        """TCP connect and bind refused (Landlock ABI 4)."""
        return self.landlock_abi >= 4

    @property
    def landlock_scopes(self) -> bool:
        """No signals or abstract Unix sockets out of the sandbox (Landlock ABI 6)."""
        return self.landlock_abi >= 6

    def as_dict(self) -> dict[str, bool | int]:
        """Each protection by name, on or off, for reports."""
        return {
            "private_copy": True,
            "network_namespace": self.network_namespace,
            "landlock_files": self.landlock_files,
            "landlock_network": self.landlock_network,
            "landlock_scopes": self.landlock_scopes,
            "landlock_abi": self.landlock_abi,
            "pid_namespace": self.pid_namespace,
            "private_folders": self.pid_namespace,
            "unix_sockets_refused": self.seccomp,
            "unprivileged_user": self.user is not None,
        }

    def describe(self) -> tuple[list[str], list[str]]:
        """(protections on, protections off), in words."""
        words = {
            "network_namespace": "network off (user and network namespace)",
            "landlock_files": "files limited to the grader, the submitted file and a work folder (Landlock)",
            "landlock_network": "TCP refused (Landlock)",
            "landlock_scopes": "no signals to other processes (Landlock)",
            "pid_namespace": "every process a grading starts ends with it (PID namespace)",
            "private_folders": "its own empty /tmp, /run, /dev/shm and home folders (mount namespace)",
            "seccomp": "no Unix sockets (seccomp)",
        }
        flags = {k: bool(getattr(self, k if k != "private_folders" else "pid_namespace")) for k in words}
        if os.geteuid() == 0:
            words["user"] = "submitted code runs as an unprivileged user, not root"
            flags["user"] = self.user is not None
        on = ["a private copy of each submitted file"] + [t for k, t in words.items() if flags[k]]
        return on, [t for k, t in words.items() if not flags[k]]


@dataclass(frozen=True)
class Confinement:
    """What a batch of gradings is confined by: the protections to use, and what every grading may read."""

    protections: Protections
    base_read: tuple[str, ...] = field(default_factory=tuple)

    def policy(self, *, workdir: str, read: list[str]) -> Policy:
        """The policy of one grading: its work folder writable, `read` (grader, submission) readable."""
        found = self.protections
        uid, gid = found.user or (-1, -1)
        return Policy(
            read=(*self.base_read, *read),
            write=(workdir, *SYSTEM_WRITE),
            namespace=found.network_namespace,
            landlock_abi=found.landlock_abi,
            tmpdir=workdir,
            processes=found.pid_namespace,
            private=found.pid_namespace,
            unix_sockets=not found.seccomp,
            user=uid,
            group=gid,
        )


def confinement(extra_read: list[str] | None = None) -> Confinement:
    """The protections this machine gives, and the Python installation every grading must read."""
    return Confinement(available(), (*python_paths(), *SYSTEM_READ, *(extra_read or [])))


def python_paths() -> list[str]:
    """The interpreter, its standard library and site-packages, the folder holding `course` itself, and the rest
    of the import path gradings are given (`import_path`)."""
    import site
    import sysconfig

    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, *sysconfig.get_paths().values()}
    paths.update(site.getsitepackages())
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    paths.add(here)  # the folder that holds the `course` package (not the course's own files)
    paths.update(import_path())  # what gradings import from besides: `PYTHONPATH`'s folders, say
    return sorted(p for p in paths if p and os.path.exists(p))


@functools.cache
def import_path() -> tuple[str, ...]:
    """The folders this process imports from that `python -I` would not: `PYTHONPATH`'s (a `pip install --target`,
    an HPC module), the user's site-packages, or any added at run time. Never the current folder, the folder
    of the script that started this process, nor a relative or missing one."""
    import json
    import subprocess

    mine = sys.path if sys.flags.safe_path else sys.path[1:]  # [0]: the script's folder, or the current one
    try:
        done = subprocess.run([sys.executable, "-I", "-c", "import json, sys; print(json.dumps(sys.path))"],
                              capture_output=True, text=True, timeout=60, check=True)
        isolated = set(json.loads(done.stdout))
    except (OSError, ValueError, subprocess.SubprocessError):
        return ()
    here = os.path.realpath(os.getcwd())
    return tuple(dict.fromkeys(
        p for p in mine if p and os.path.isabs(p) and p not in isolated and os.path.isdir(p)
        and os.path.realpath(p) != here))


def contained() -> Policy | None:
    """The policy of a grading that is not sandboxed (`course check`, watch, the notebook): only its
    processes kept in a PID namespace that ends with it. None where the machine cannot."""
    return Policy(namespace=False, processes=True) if available().pid_namespace else None


_PROBING = threading.Lock()


def available() -> Protections:
    """Which protections work here, tried once in a throw-away process (never in this one). A caller that comes
    while `probe_soon`'s thread is trying waits for its answer rather than trying again."""
    with _PROBING:
        return _available()


def probe_soon() -> None:
    """Start finding out `available()` on a thread of its own (once): a command about to grade loads and reads its
    course meanwhile, and finds the answer ready (the probe is a process, so it runs on another core)."""
    if not _SOON:
        _SOON.append(threading.Thread(target=available, name="course-probe", daemon=True))
        _SOON[0].start()


_SOON: list[threading.Thread] = []


@functools.cache
def _available() -> Protections:
    """`available()`, once per process."""
    if os.environ.get("COURSE_PORTABLE") == "1" or not sys.platform.startswith("linux"):
        return Protections()
    abi = landlock_abi()
    user = unprivileged_user() if os.geteuid() == 0 else None
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-S", _SANDBOX_FILE, "--probe", *(str(n) for n in user or ()),
             *(import_path() if user else ())],
            capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
        words = set(done.stdout.split()) if done.returncode == 0 else set()
    except (OSError, subprocess.SubprocessError):
        words = set()
    return Protections(network_namespace="namespace" in words, landlock_abi=abi, pid_namespace="processes" in words,
                       seccomp="seccomp" in words, user=user if "user" in words else None)


def own_rights() -> str:
    """One line for a learner's grading command where nothing stands between their code and what their user can
    reach beyond the grading's own limits: run as root, or on a machine with no PID namespace; '' elsewhere."""
    if os.geteuid() == 0:
        return ("your code runs as root here, with root's rights: `course check` does not confine it, so it can "
                "read and change any file on this machine (docs/security.md)")
    if available().pid_namespace:
        return ""
    return ("your code runs with your own rights here: this machine gives `course check` no namespace to confine "
            "it in, so it can reach whatever you can (docs/security.md)")


def grades_as_root(found: Protections) -> bool:
    """Whether `course grade` would run submitted code as root: it runs as root, and no unprivileged user (one
    that can run this Python) is there to grade as."""
    return os.geteuid() == 0 and found.user is None


def unprivileged_user() -> tuple[int, int]:
    """The uid and gid a root `course` grades as: the `course-grader` user where the machine has one
    (the autograder bundles make it), else `nobody`."""
    import pwd

    for name in ("course-grader", "nobody"):
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            continue
        return entry.pw_uid, entry.pw_gid
    return 65534, 65534


