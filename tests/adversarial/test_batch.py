"""Adversarial corpus for batch grading: students who attack classmates while `course grade` grades them.

Each attack in `attacks/batch/` is one student's `ex_pass.py`: it tries to read a classmate's file
or results, to overwrite a classmate's or its own `results.json`, to open a socket, or to signal
the processes that grade its classmates; then it returns the right value, unless an attack went
through, in which case it raises and says what it did. So a sandbox that holds shows as a full
score for every attacker, and a leak shows as a failure naming it. Besides, the classmates'
results and the gradebook must be exactly those of an honest class, and nothing may reach the
listener. Where the machine lacks the protection an attack needs (`course.engine.contain.sandbox`), nothing
can stop it, and the promise is the honest one: the attacker's results and the class summary say
that protection was off.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from class_helpers import MAX_TOTAL, SOLUTION, assert_gradescope, class_course, honest_class, write_folder
from course.engine.contain import protections

ATTACKS = Path(__file__).parent / "attacks" / "batch"
COURSE_BIN = Path(sys.executable).with_name("course")
PROTECTIONS = protections.available()
# The flags of `Protections.as_dict()` that stop each attack; one is enough.
STOPPED_BY = {
    "read_classmate": ("landlock_files",),
    "write_results": ("landlock_files",),
    "open_socket": ("network_namespace", "landlock_network"),
    "kill_graders": ("landlock_scopes", "pid_namespace"),
    "unix_socket": ("unix_sockets_refused",),
    "see_instructor_files": ("private_folders",),
    "outlive": ("pid_namespace",),
    "rewrite_grader": ("landlock_files", "unprivileged_user"),
    # The grading process is non-dumpable everywhere; in its own user namespace nothing holds the
    # capability that reads a non-dumpable process (as root without one, root's would).
    "read_memory": ("pid_namespace", "unprivileged_user"),
}
NEEDS = {attack: any(PROTECTIONS.as_dict()[flag] for flag in flags) for attack, flags in STOPPED_BY.items()}


class Listener:
    """A TCP and a UDP socket on one loopback port, and a pathname Unix socket that anyone may connect
    to (as an instructor's tmux or ssh agent would be to the same user), recording whatever reaches them."""

    def __init__(self) -> None:
        self.tcp = socket.create_server(("127.0.0.1", 0))
        self.port = self.tcp.getsockname()[1]
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", self.port))
        self.folder = Path(tempfile.mkdtemp(prefix="course-instructor-"))
        self.folder.chmod(0o755)  # reachable by any user: only the sandbox may stop a connection
        self.unix_path = str(self.folder / "agent.sock")
        self.unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.unix.bind(self.unix_path)
        os.chmod(self.unix_path, 0o777)
        self.unix.listen()
        self.received: list[bytes] = []
        for sock in (self.tcp, self.udp, self.unix):
            sock.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        """Accept and read until stopped."""
        while not self._stop.is_set():
            for server in (self.tcp, self.unix):
                try:
                    conn, _ = server.accept()
                    with conn:
                        self.received.append(conn.recv(1024) or b"(connected)")
                except OSError:
                    pass
            with contextlib.suppress(OSError):
                self.received.append(self.udp.recv(1024))

    def close(self) -> None:
        """Stop listening."""
        self._stop.set()
        self._thread.join(timeout=2)
        self.tcp.close()
        self.udp.close()
        self.unix.close()
        shutil.rmtree(self.folder, ignore_errors=True)


@dataclass
class Batch:
    """One graded class with the attackers in it."""

    argv: list[str]
    out: Path
    returncode: int
    summary: dict
    secret: str
    token: str
    received: list[bytes]
    expected: dict[str, float]
    strays: list[int]
    """Processes a submission started that were still alive after `course grade` ended."""
    touched: list[str]
    """The course's grader files a submission managed to write to."""

    def results(self, student: str) -> dict:
        """A student's results.json."""
        return json.loads((self.out / student / "results.json").read_text(encoding="utf-8"))

    def everything_written(self) -> dict[str, str]:
        """Every file of the output folder, as text, by its path in the folder."""
        return {str(p.relative_to(self.out)): p.read_text(encoding="utf-8", errors="replace")
                for p in self.out.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> Batch:
    """Grade the honest class plus one student per attack, once, through the real `course grade`."""
    return grade_class(tmp_path_factory.mktemp("batch"), dict(os.environ))


@pytest.fixture(scope="module")
def unprotected(tmp_path_factory: pytest.TempPathFactory) -> Batch:
    """The same class graded as on a machine with no sandbox (`COURSE_PORTABLE=1`, as on macOS)."""
    return grade_class(tmp_path_factory.mktemp("unprotected"), {**os.environ, "COURSE_PORTABLE": "1"})


def grade_class(root: Path, env: dict[str, str]) -> Batch:
    """Grade the honest class plus one student per attack through the real `course grade`, under `env`."""
    course, subs, out = class_course(root), root / "subs", root / "out"
    expected = honest_class(subs)
    secret, token = f"CLASSMATE_SECRET_{uuid.uuid4().hex}", f"BATCHTOKEN{uuid.uuid4().hex}"
    write_folder(subs / "alice", {"exercises/01_ex_pass/ex_pass.py": f"{SOLUTION}\n# {secret}\n"})
    listener = Listener()
    try:
        graders = course / "graders" / "01_ex_pass"
        for attack in sorted(ATTACKS.glob("*.py")):
            text = attack.read_text(encoding="utf-8").replace("__PORT__", str(listener.port))
            text = text.replace("__UNIXSOCK__", listener.unix_path).replace("__GRADERS__", str(graders))
            write_folder(subs / attack.stem, {"ex_pass.py": text.replace("__TOKEN__", token)})
            expected[attack.stem] = 3.0
        # A seed holding 999, the forged score's digits: the files must be searched for what was forged, not digits.
        argv = [str(COURSE_BIN), "grade", str(subs), "--out", str(out), "--course", str(course), "--json",
                "--seed", "1999"]
        done = subprocess.run([*argv, "--jobs", "2"], capture_output=True, text=True, timeout=900, check=False,
                              env=env)
    finally:
        listener.close()
    strays = _strays(token)  # looked for once the class is graded, then ended whatever the verdict
    for pid in strays:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    touched = [p.name for p in graders.rglob("*.py") if token in p.read_text(encoding="utf-8")]
    assert done.stdout.strip(), done.stderr[-2000:]
    return Batch(argv, out, done.returncode, json.loads(done.stdout), secret, token, listener.received, expected,
                 strays, touched)


def _strays(token: str) -> list[int]:
    """Processes whose command line holds `token`."""
    found = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if entry.name.isdigit() and token.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
    return found


@pytest.mark.parametrize("attack", sorted(NEEDS))
def test_the_attack_does_not_go_through(batch: Batch, attack: str) -> None:
    """The attacker's code ran to the end with no attack succeeding: it scores what honest code scores.

    Without the protection that stops it, its results must say that protection was off instead.
    """
    results = batch.results(attack)
    if not NEEDS[attack]:
        assert_disclosed(batch, results, STOPPED_BY[attack])
        return
    assert_gradescope(results, attack)
    messages = "\n".join(t["output"] for t in results["tests"])
    assert results["score"] == 3.0, messages
    assert not any(word in messages for word in ("LEAKED", "WROTE", "SENT", "SIGNALLED")), messages


def test_classmates_are_graded_as_an_honest_class(batch: Batch) -> None:
    """Every student has the score their own files earn; the gradebook and totals are untouched.

    Where some attack cannot be stopped, the summary must say which protections were off instead.
    """
    if not all(NEEDS.values()):
        assert_disclosed(batch, batch.results("alice"), [f for a, fs in STOPPED_BY.items() if not NEEDS[a] for f in fs])
        return
    assert batch.returncode == 0, batch.summary
    assert batch.summary["totals"] == batch.expected
    with (batch.out / "gradebook.csv").open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["student"]: float(r["total"]) for r in rows} == batch.expected
    assert {float(r["max_total"]) for r in rows} == {MAX_TOTAL}
    assert sorted(p.name for p in batch.out.iterdir() if p.is_dir()) == sorted(batch.expected)
    for student in ("alice", "bob", "carol", "dave"):
        assert_gradescope(batch.results(student), student)


def test_nothing_leaked_or_reached_the_network(batch: Batch) -> None:
    """No classmate's secret and no forged result appears in any file written; no packet reached the listener.

    Where some attack cannot be stopped, the summary must say which protections were off instead.
    """
    if not all(NEEDS.values()):
        assert_disclosed(batch, batch.results("alice"), [f for a, fs in STOPPED_BY.items() if not NEEDS[a] for f in fs])
        return
    # One question per assertion, naming the file: a compound `and` made pytest print "the secret is
    # contained here" when only a seed or a time holding the digits 999 had matched.
    for name, text in batch.everything_written().items():
        assert batch.secret not in text, f"a classmate's secret is in {name}"
        assert "FORGED" not in text, f"a forged result is in {name}"
    for results in batch.out.glob("*/results.json"):
        assert json.loads(results.read_text(encoding="utf-8"))["score"] != 999, f"a forged score in {results}"
    assert batch.received == []


def test_no_process_outlives_the_class(batch: Batch) -> None:
    """A submission that keeps replacing itself in a new session leaves nothing behind: each grading's
    processes live in a PID namespace that ends with it. Without one, the results must say so."""
    if not NEEDS["outlive"]:
        assert_disclosed(batch, batch.results("outlive"), STOPPED_BY["outlive"])
        return
    assert batch.strays == []


def test_graders_are_never_written(batch: Batch) -> None:
    """No submission writes to the instructor's graders: Landlock, or a grading user of its own as root."""
    if not NEEDS["rewrite_grader"]:
        assert_disclosed(batch, batch.results("rewrite_grader"), STOPPED_BY["rewrite_grader"])
        return
    assert batch.touched == []


def assert_disclosed(batch: Batch, results: dict, flags: tuple[str, ...] | list[str],
                     protections: protections.Protections = PROTECTIONS) -> None:
    """The results and the summary say that every protection in `flags` was off, in flags and in words."""
    isolation = results["extra_data"]["isolation"]
    assert flags and not any(isolation[flag] for flag in flags), isolation
    _, off = protections.describe()
    assert off and batch.summary["isolation"]["off"] == off, batch.summary["isolation"]


def test_results_say_which_protections_were_on(batch: Batch) -> None:
    """Each results file and the summary record the isolation this machine gave."""
    flags = batch.results("alice")["extra_data"]["isolation"]
    assert flags == {**PROTECTIONS.as_dict()}
    assert batch.summary["isolation"]["on"][0] == "a private copy of each submitted file"


def test_a_rerun_grades_nobody_again(batch: Batch) -> None:
    """The same class again: every student's results stand, nothing is graded, the totals are the same."""
    before = {p: p.read_bytes() for p in batch.out.glob("*/results.json")}
    done = subprocess.run(batch.argv, capture_output=True, text=True, timeout=600, check=False)
    summary = json.loads(done.stdout)
    assert done.returncode == batch.returncode and summary["graded_now"] == 0
    assert summary["reused"] == len(batch.expected) and summary["totals"] == batch.summary["totals"]
    assert {p: p.read_bytes() for p in batch.out.glob("*/results.json")} == before


@pytest.mark.parametrize("attack", sorted(STOPPED_BY))
def test_without_a_sandbox_the_results_say_so(unprotected: Batch, attack: str) -> None:
    """With every protection off, each attacker's results and the summary say which protections were off.

    This is the promise a learner's macOS gives, proved here on Linux by turning the protections off.
    """
    results = unprotected.results(attack)
    assert_disclosed(unprotected, results, STOPPED_BY[attack], protections.Protections())
    assert results["extra_data"]["isolation"]["private_copy"] is True
