"""Adversarial corpus: each attack file is graded by the real `course check` in a fresh workspace.

Every attack must end not passed, with a message in plain words; no process may survive it, the
learner's file must be as the attack left it, and the progress file must parse and hold no false
pass. Honest controls must pass, so these tests can tell a working grader from a broken one.
Nothing here is timed: an exercise's limit is CPU time, which a busy machine does not use up, and
the one attack that runs into it (`infinite_loop`) must say it was its CPU time, not the clock.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from course.paths import WorkspacePaths
from course.progress import ProgressStore

HERE = Path(__file__).parent
COURSE_DIR = HERE / "course"
ATTACKS = HERE / "attacks"
COURSE_BIN = Path(sys.executable).with_name("course")
STUBS = {
    "double": "exercises/01_double/double.py",
    "double_array": "exercises/02_double_array/double_array.py",
    "donate_double": "exercises/03_donate_double/donate_double.py",
}
HANG_GUARD_S = 600
"""Far above any exercise's wall-clock cap: only a grading that never ends runs into it."""
END_EARLY = r"ended before reporting.*`sys\.exit` or `os\._exit`"
WRONG = r"should be -?\d+, but it is"
TAMPERED = r"grading machinery was tampered with"


@dataclass(frozen=True)
class Case:
    """One attack: the file, the exercise it targets, and what the learner must be told."""

    file: str
    exercise: str = "double"
    statuses: tuple[str, ...] = ("failed",)
    message: str = WRONG
    after: str = "intact"  # what the learner's file looks like afterwards: intact, deleted, rewritten
    beside: bool = False  # conftest.py, pytest.py, jax.py and numpy.py placed beside the stub


CASES = [
    Case("sys_exit_import", message=r"called sys\.exit\(0\) while being imported"),
    Case("sys_exit_call", message=r"called sys\.exit\(0\) during the check"),
    Case("os_exit_import", message=END_EARLY),
    Case("os_exit_call", message=END_EARLY),
    Case("infinite_loop", statuses=("timeout",), message=r"used 4 s of CPU time, this exercise's limit, and was "
         r"stopped at double\.py line \d+, in double"),
    # Signal handlers are refused while checks run (one could run inside the notary's frame).
    Case("ignore_sigterm", message=TAMPERED + r": your code installed a signal handler"),
    Case("thread_left_running"),
    Case("child_left_running"),
    Case("double_fork_escape"),
    Case("memory_bomb", message=r"ran out of memory"),
    Case("print_gigabytes", message=r"printed more than \d+ MiB of output"),
    Case("shadow_modules", beside=True),
    Case("shadow_modules_array", exercise="double_array", beside=True, message=r"differs from the expected value"),
    Case("fake_passed_lines"),
    Case("forged_report_tmp"),
    Case("forged_report_argv", message=TAMPERED + r": your code touched the folder of the grading report"),
    Case("progress_claim"),
    Case("always_equal", exercise="double_array", message=r"should be a jax\.Array, but it is an object"),
    Case("numpy_result", exercise="double_array", message=r"should be a jax\.Array, but it is a NumPy array"),
    Case("list_result", exercise="double_array", message=r"should be a jax\.Array, but it is a list"),
    Case("patch_call_and_report", message=TAMPERED),
    Case("patch_testreport", message=TAMPERED),
    Case("patch_plugin", message=TAMPERED),
    Case("patch_grading", message=TAMPERED),
    Case("hardcoded_example", message=WRONG),
    Case("delete_own_stub", after="deleted"),
    Case("rewrite_own_stub", after="rewritten"),
    Case("close_stdio"),
    # pytest writes nothing of its own through sys.stdout while grading: closing it changes nothing.
    Case("close_sys_stdout"),
    # Forging the verdict (docs/security.md): every one must end in a report that says so.
    Case("steal_key_gc", message=TAMPERED + r": your code walked the garbage collector's objects"),
    Case("steal_key_frames", message=TAMPERED + r": your code touched the folder of the grading report"),
    Case("steal_key_bfs", message=TAMPERED),  # its walk trips the guard early or late: either says so
    Case("sign_without_key", message=TAMPERED + r": a verdict came from outside the grading machinery"),
    Case("swap_check_code", message=TAMPERED + r": your code rewrote __code__ of a function of the grading"),
    Case("swap_helper_code", message=TAMPERED + r": your code rewrote __code__ of a function of the grading"),
    Case("patch_is_deleted", exercise="donate_double", message=TAMPERED + r".*jax\._src\.array\.ArrayImpl\.is_deleted"),
    Case("patch_listeners", exercise="donate_double", message=TAMPERED + r".*jax monitoring's _event_duration"),
    # Under load the racing thread can leave the report empty as the grading ends: then it reads as a run that
    # ended before reporting. Either way the file fails with nothing earned, which is what this case holds.
    Case("race_report_thread", message=r"report was damaged, so the grading machinery was tampered|" + TAMPERED
         + "|" + END_EARLY),
    Case("ctypes_memory", message=TAMPERED + r": your code used ctypes"),
    Case("proc_self_mem", message=TAMPERED + r": your code opened raw memory \(/proc/\d+/mem\)"),
    # A child removes the report's folder: the learner's doing (exit 1, recorded), never exit 3.
    Case("delete_report", message=r"report was removed or changed while your code ran"),
]
CONTROLS = [
    Case("solution", statuses=("passed",), message=r"all 2 checks passed"),
    Case("solution_array", exercise="double_array", statuses=("passed",), message=r"all 1 checks passed"),
    # Honest code that looks around itself, as learners debugging do: none of it is tampering.
    Case("honest_traceback", statuses=("passed",), message=r"all 2 checks passed"),
    Case("honest_frames", statuses=("passed",), message=r"all 2 checks passed"),
    Case("honest_thread", statuses=("passed",), message=r"all 2 checks passed"),
    Case("honest_functools", statuses=("passed",), message=r"all 2 checks passed"),
    Case("solution_donate", exercise="donate_double", statuses=("passed",), message=r"all 2 checks passed"),
]
# Two gradings at a time: the corpus is mostly process start-up, and the machine has 2 cores.
WORKERS = 2
SLOW = {"infinite_loop", "always_equal", "numpy_result", "list_result", "shadow_modules_array",
        "patch_is_deleted", "patch_listeners", "solution_donate"}


@dataclass
class Graded:
    """What one `course check` run produced."""

    result: dict
    returncode: int
    workspace: Path
    stub: Path
    source: str
    token: str


def _params(cases: list[Case]) -> list[object]:
    """Parametrize by file name, marking the cases that import JAX or run into the limit."""
    return [pytest.param(c, id=c.file, marks=[pytest.mark.slow] if c.file in SLOW else []) for c in cases]


def _course(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run the installed `course` command as a learner would, with no course settings inherited; its
    temporary folder is one of the test's own, so what an attack writes there goes with the test."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("COURSE_")}
    (scratch := cwd / "tmp").mkdir(exist_ok=True)
    env["TMPDIR"] = str(scratch)
    return subprocess.run(
        [str(COURSE_BIN), *args, "--course", str(COURSE_DIR)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
        check=False,
    )


def _grade(case: Case, tmp_path: Path) -> Graded:
    """Copy the attack into a fresh workspace (with its neighbours) and grade it once."""
    token = f"advtok{uuid.uuid4().hex}"
    workspace = tmp_path / "ws"
    stub = workspace / STUBS[case.exercise]
    stub.parent.mkdir(parents=True)
    source = (ATTACKS / f"{case.file}.py").read_text(encoding="utf-8").replace("__TOKEN__", token)
    stub.write_text(source, encoding="utf-8")
    if case.beside:
        for fake in (ATTACKS / "beside").glob("*.py.txt"):
            shutil.copy(fake, stub.parent / fake.name.removesuffix(".txt"))
    done = _course("check", case.exercise, "--workspace", str(workspace), "--json", cwd=tmp_path)
    assert done.stdout.strip(), f"no JSON on stdout; stderr: {done.stderr[-2000:]}"
    result = json.loads(done.stdout)["exercises"][0]
    return Graded(result, done.returncode, workspace, stub, source, token)


def _strays(needles: list[bytes]) -> list[int]:
    """Processes whose command line or environment holds any of `needles`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            blob = (entry / "cmdline").read_bytes() + (entry / "environ").read_bytes()
        except OSError:
            continue
        if any(n in blob for n in needles):
            found.append(int(entry.name))
    return found


def _words(result: dict) -> str:
    """The exercise's message and every check's message, as the learner reads them."""
    return "\n".join([result["message"], *(c["message"] for c in result["checks"])])


def _assert_workspace(case: Case, graded: Graded) -> None:
    """The learner's file is as the attack left it, and progress parses and holds no false pass."""
    if case.after == "intact":
        assert graded.stub.read_text(encoding="utf-8") == graded.source
    elif case.after == "deleted":
        assert not graded.stub.exists()
    else:
        assert f"rewritten by {graded.token}" in graded.stub.read_text(encoding="utf-8")
    progress_path = graded.workspace / ".course" / "progress.json"
    json.loads(progress_path.read_text(encoding="utf-8"))
    stored = ProgressStore(WorkspacePaths(graded.workspace)).load().exercises
    want_pass = "passed" in case.statuses
    for name in STUBS:
        entry = stored.get(name)
        if name == case.exercise:
            assert entry is not None and (entry.status == "passed") == want_pass, stored
        else:
            assert entry is None or entry.status != "passed", f"false pass stored for {name}: {stored}"


def _check_case(case: Case, tmp_path: Path) -> Graded:
    """Grade one case and assert everything every case owes; kill anything it left behind."""
    graded = None
    try:
        graded = _grade(case, tmp_path)
        result = graded.result
        assert result["status"] in case.statuses, _words(result)
        assert graded.returncode == (0 if "passed" in case.statuses else 1), _words(result)
        assert re.search(case.message, _words(result), re.S), _words(result)
        assert "wall-clock time" not in _words(result), "stopped by the clock: a busy machine decided this"
        assert not _strays([graded.token.encode(), str(graded.stub).encode()]), "a process outlived grading"
        assert not (Path(tempfile.gettempdir()) / f"{graded.token}.json").exists(), "written outside TMPDIR"
        _assert_workspace(case, graded)
        return graded
    finally:
        if graded is not None:
            for pid in _strays([graded.token.encode()]):
                os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def corpus(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """Grade every selected case once, a few at a time, slowest first; a case maps to its
    `Graded` or to the AssertionError its checks raised."""
    selected = {
        item.callspec.params["case"]
        for item in request.session.items
        if item.module is request.module and hasattr(item, "callspec") and "case" in item.callspec.params
    }
    order = sorted(selected, key=lambda c: (c.file not in SLOW, c.file))
    # pytest makes its base temporary folder on first use, and two threads doing that at once race
    # (FileExistsError): a pytest-xdist worker whose first test is this one meets it. Make it here.
    tmp_path_factory.getbasetemp()

    def run(case: Case) -> object:
        try:
            return _check_case(case, tmp_path_factory.mktemp(case.file))
        except AssertionError as exc:
            return exc

    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        return dict(zip((c.file for c in order), pool.map(run, order), strict=True))


def _outcome(corpus: dict[str, object], case: Case) -> Graded:
    """This case's graded run, re-raising what went wrong in it."""
    outcome = corpus[case.file]
    if isinstance(outcome, AssertionError):
        raise outcome
    assert isinstance(outcome, Graded)
    return outcome


@pytest.mark.parametrize("case", _params(CASES))
def test_attack_is_not_passed(case: Case, corpus: dict[str, object]) -> None:
    """The attack ends not passed, in time, in plain words, with nothing left behind."""
    graded = _outcome(corpus, case)
    tmp_path = graded.workspace.parent
    assert graded.result["score"] == 0
    if case.beside:
        assert not list(graded.stub.parent.glob("SHADOW_IMPORTED_*")), "a module beside the stub was imported"
    if case.after == "deleted":
        # The learner's work is never lost for good: `course reset` brings the stub back.
        done = _course("reset", case.exercise, "--yes", "--workspace", str(graded.workspace), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert graded.stub.read_bytes() == (COURSE_DIR / STUBS[case.exercise]).read_bytes()
    if case.after == "rewritten":
        # The verdict was on the bytes read at start-up; the next check grades the new file.
        done = _course("check", case.exercise, "--workspace", str(graded.workspace), "--json", cwd=tmp_path)
        assert json.loads(done.stdout)["exercises"][0]["status"] == "passed", done.stdout


@pytest.mark.parametrize("case", _params(CONTROLS))
def test_honest_solution_passes(case: Case, corpus: dict[str, object]) -> None:
    """The reference solution passes under the same harness, so the attack verdicts mean something."""
    graded = _outcome(corpus, case)
    assert graded.result["score"] == graded.result["max_score"] > 0


@pytest.mark.slow
def test_attacks_through_the_warm_worker(tmp_path: Path) -> None:
    """`course check --all` forks gradings from the warm worker: escapes and patches fail there too."""
    token = f"advtok{uuid.uuid4().hex}"
    workspace = tmp_path / "ws"
    for name, attack in (("double", "double_fork_escape"), ("double_array", "escape_array")):
        stub = workspace / STUBS[name]
        stub.parent.mkdir(parents=True)
        stub.write_text((ATTACKS / f"{attack}.py").read_text(encoding="utf-8").replace("__TOKEN__", token))
    try:
        done = _course("check", "--all", "--workspace", str(workspace), "--json", cwd=tmp_path)
        results = {e["name"]: e for e in json.loads(done.stdout)["exercises"]}
        assert done.returncode == 1, done.stderr
        assert results["double"]["status"] == "failed" and re.search(WRONG, _words(results["double"]))
        assert results["double_array"]["status"] == "failed"
        assert re.search(TAMPERED, results["double_array"]["message"])
        assert not _strays([token.encode()]), "a process outlived grading"
        assert not any(e.status == "passed" for e in ProgressStore(WorkspacePaths(workspace)).load().exercises.values())
    finally:
        for pid in _strays([token.encode()]):
            os.kill(pid, signal.SIGKILL)
