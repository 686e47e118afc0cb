"""The grading sandbox: what a confined process can and cannot touch, cold and in the warm worker's child."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from course.engine.contain import protections, sandbox
from course.engine.parent import runner
from course.registry import load_course

PROTECTIONS = protections.available()
ADVERSARIAL = Path(__file__).parents[1] / "adversarial" / "course"
PROBE = r"""
import json, os, signal, socket, sys
secret, work, outside = sys.argv[1], sys.argv[2], int(sys.argv[3])
seen = {}
def attempt(name, fn):
    try:
        fn()
        seen[name] = True
    except OSError:
        seen[name] = False
attempt("read_secret", lambda: open(secret).read())
attempt("write_work", lambda: open(os.path.join(work, "f"), "w").write("ok"))
attempt("write_beside_secret", lambda: open(secret + ".new", "w").write("x"))
attempt("connect", lambda: socket.create_connection(("127.0.0.1", 9), timeout=1))
attempt("signal_parent", lambda: os.kill(outside, 0))  # the test's own process, outside the sandbox
import tempfile
seen["tmpdir"] = tempfile.gettempdir()
print(json.dumps(seen))
"""


def _confined(tmp_path: Path) -> dict:
    """Run the probe in a sandbox whose only writable folder is `work`; what it could do."""
    secret = tmp_path / "secret" / "data.txt"
    secret.parent.mkdir()
    secret.write_text("classmate's work", encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    policy = protections.confinement().policy(workdir=str(work), read=[])
    command = sandbox.wrap([sys.executable, "-I", "-c", PROBE, str(secret), str(work), str(os.getpid())], policy)
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) | {"work": str(work)}


@pytest.mark.skipif(not PROTECTIONS.landlock_files, reason="this kernel has no Landlock")
def test_files_are_limited_to_the_policy(tmp_path: Path) -> None:
    """Outside its folders a confined process can neither read nor write; its work folder is its temp folder."""
    seen = _confined(tmp_path)
    assert not seen["read_secret"] and not seen["write_beside_secret"]
    assert seen["write_work"] and seen["tmpdir"] == seen["work"]


@pytest.mark.skipif(not (PROTECTIONS.network_namespace or PROTECTIONS.landlock_network), reason="no network sandbox")
def test_the_network_is_off(tmp_path: Path) -> None:
    """No TCP connection leaves a confined process, not even to the machine itself."""
    assert not _confined(tmp_path)["connect"]


@pytest.mark.skipif(not PROTECTIONS.landlock_scopes, reason="this kernel's Landlock cannot scope signals")
def test_no_signal_leaves_the_sandbox(tmp_path: Path) -> None:
    """A confined process cannot signal its parent (nor any process outside its sandbox)."""
    assert not _confined(tmp_path)["signal_parent"]


def test_portable_mode_turns_every_protection_off() -> None:
    """COURSE_PORTABLE=1 reports no protection at all, and the class report says what is off."""
    code = ("from course.engine.contain import protections; import json; "
            "print(json.dumps(protections.available().as_dict()))")
    env = {**os.environ, "COURSE_PORTABLE": "1"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    flags = json.loads(done.stdout)
    assert flags["private_copy"] and not any(v for k, v in flags.items() if k != "private_copy")
    on, off = protections.Protections().describe()
    # Each protection the machine could give (private folders among them) is named as off: as root,
    # running as a user of its own too.
    assert on == ["a private copy of each submitted file"] and len(off) == (8 if os.geteuid() == 0 else 7)


@pytest.mark.skipif(not PROTECTIONS.active, reason="no sandbox on this machine")
@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
def test_a_sandboxed_grading_gives_the_same_verdicts(warm: bool) -> None:
    """The solution passes and the stub fails inside the sandbox, whether started cold or forked warm."""
    exercise = load_course(ADVERSARIAL).get("double")
    confinement = protections.confinement()
    worker = runner.start_worker() if warm else None
    try:
        if worker is not None:
            assert worker.ready()
        passed = runner.grade(exercise, exercise.solution_path, worker=worker, sandbox=confinement)
        failed = runner.grade(exercise, exercise.stub_path, worker=worker, sandbox=confinement, skip_stub=False)
    finally:
        if worker is not None:
            worker.close()
    assert passed.status == "passed", passed.message
    assert failed.status == "failed" and failed.checks, failed.message


@pytest.mark.skipif(not PROTECTIONS.landlock_files, reason="this kernel has no Landlock")
def test_a_grading_that_cannot_start_in_its_sandbox_is_a_platform_error() -> None:
    """A sandbox that lets nothing be read stops the grading before pytest: an error, never the learner's fault."""
    exercise = load_course(ADVERSARIAL).get("double")
    empty = protections.Confinement(PROTECTIONS, base_read=())
    result = runner.grade(exercise, exercise.solution_path, sandbox=empty)
    assert result.status == "error" and "failed to start" in result.message, result.message
    assert "could not start inside its sandbox" in result.message


SYSTEM_PYTHON = Path("/usr/bin/python3")


@pytest.mark.skipif(os.geteuid() != 0 or not SYSTEM_PYTHON.exists(),
                    reason="only a root `course` becomes a user of its own; needs a Python that user can run")
def test_a_root_grading_becomes_a_user_of_its_own(tmp_path: Path) -> None:
    """As root, the sandbox turns into the unprivileged user before anything else, with no capability, in a
    PID namespace of its own: it cannot write a file root owns, nor signal a process outside."""
    import tempfile

    open_folder = Path(tempfile.mkdtemp(prefix="course-test-"))
    try:
        open_folder.chmod(0o755)
        owned = open_folder / "graders.py"
        owned.write_text("# the instructor's\n")
        owned.chmod(0o644)
        uid, gid = protections.unprivileged_user()
        policy = sandbox.Policy(namespace=False, processes=True, user=uid, group=gid, tmpdir=str(open_folder))
        code = ("import json, os\nseen = {'uid': os.getuid(), 'pid': os.getpid()}\n"
                f"try:\n    open({str(owned)!r}, 'a').write('x')\n    seen['wrote'] = True\n"
                "except OSError:\n    seen['wrote'] = False\n"
                "caps = [l.split()[1] for l in open('/proc/self/status') if l.startswith('CapEff')]\n"
                "seen['caps'] = caps[0]\nprint(json.dumps(seen))\n")
        done = subprocess.run(sandbox.wrap([str(SYSTEM_PYTHON), "-S", "-c", code], policy), capture_output=True,
                              text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        seen = json.loads(done.stdout)
        assert seen == {"uid": uid, "pid": 1, "wrote": False, "caps": "0000000000000000"}, seen
        assert owned.read_text() == "# the instructor's\n"
    finally:
        import shutil

        shutil.rmtree(open_folder, ignore_errors=True)
