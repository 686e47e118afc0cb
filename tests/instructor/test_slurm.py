"""A real Slurm array job runs the example of docs/grading.md, and the merge equals one run's gradebook.

It starts its own `slurmctld` and `slurmd` on this machine, from a minimal configuration in a
temporary folder (one node, no accounting, no authentication daemon), submits the guide's array
job (`course grade --shard K/N`, one shard per task) and the merge that depends on it, and
compares the merged `gradebook.csv` with a single run's, byte for byte. Slurm is Debian's
`slurm-wlm`; where it is not installed (CI), this file is not collected (tests/conftest.py).
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from class_helpers import SOLUTION, WRONG, class_course, write_folder, write_zip

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
SHARDS = 3
CONF = """\
ClusterName=coursetest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/none
CredType=cred/none
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory_mb} State=UNKNOWN
PartitionName=grading Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


def _free_port() -> int:
    """A TCP port nobody listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _guide_job() -> str:
    """The array job of docs/grading.md, as the guide writes it."""
    text = (REPO / "docs" / "grading.md").read_text(encoding="utf-8")
    script = re.search(r"```bash\n(#!/bin/bash\n#SBATCH --job-name=grade-class\n.*?)```", text, re.DOTALL)
    assert script, "docs/grading.md no longer holds the Slurm array job"
    return script[1]


def _slurm(env: dict[str, str], *argv: str) -> str:
    """Run a Slurm client command; its output."""
    done = subprocess.run(list(argv), env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A one-node Slurm cluster on this machine: the environment its clients use."""
    if os.geteuid() != 0:
        pytest.skip("slurmd runs jobs as their owner, which needs root; run this test as root")
    root = tmp_path / "slurm"
    (root / "state").mkdir(parents=True)
    (root / "spool").mkdir()
    host = socket.gethostname().split(".")[0]
    cpus = len(os.sched_getaffinity(0))
    conf = root / "slurm.conf"
    conf.write_text(CONF.format(host=host, root=root, ctld_port=_free_port(), d_port=_free_port(), cpus=cpus,
                                memory_mb=4000), encoding="utf-8")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("COURSE_", "SLURM_"))},
           "SLURM_CONF": str(conf), "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    daemons = [subprocess.Popen(["slurmctld", "-D", "-c", "-f", str(conf)], env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)]
    try:
        deadline = time.monotonic() + 60
        while subprocess.run(["scontrol", "ping"], env=env, capture_output=True, check=False).returncode:
            assert time.monotonic() < deadline, (root / "slurmctld.log").read_text(errors="replace")
            time.sleep(0.5)
        daemons.append(subprocess.Popen(["slurmd", "-D", "-f", str(conf), "-N", host], env=env,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        while "idle" not in _slurm(env, "sinfo", "-h", "-o", "%T"):
            assert time.monotonic() < deadline, (root / "slurmd.log").read_text(errors="replace")
            time.sleep(0.5)
        yield env
    finally:
        for daemon in reversed(daemons):
            daemon.terminate()
            try:
                daemon.wait(timeout=30)
            except subprocess.TimeoutExpired:
                daemon.kill()
                daemon.wait()


@pytest.mark.slow
def test_the_guides_array_job_and_merge_equal_one_run(tmp_path: Path, cluster: dict[str, str]) -> None:
    """Three array tasks grade a shard each, a dependent job merges them: its gradebook is a single
    run's, byte for byte, bad entry included."""
    work = tmp_path / "class"
    course = class_course(work)
    subs = work / "submissions"
    for k, name in enumerate(["ada", "alan", "grace", "edsger", "barbara"]):
        write_folder(subs / name, {"ex_pass.py": SOLUTION if k % 2 == 0 else WRONG, "ex_fail.py": SOLUTION})
    write_zip(subs / "donald.zip", {"ex_pass.py": SOLUTION})
    (subs / "s1006.zip").write_bytes(b"PK\x03\x04 cut short")
    env = {**cluster, "COURSE_ROOT": str(course), "COURSE_NO_PROGRESS": "1"}
    single = subprocess.run([str(BIN / "course"), "grade", str(subs), "--out", str(work / "single"), "--seed",
                             "2027"], env=env, capture_output=True, text=True, timeout=600, check=False)
    assert single.returncode == 2, single.stderr  # the damaged zip is named: exit 2, everyone else graded
    script = _guide_job().replace("--array=1-8", f"--array=1-{SHARDS}").replace("--cpus-per-task=4",
                                                                              "--cpus-per-task=1")
    script = script.replace("--mem=8G", "--mem=1G")
    (work / "grade.sbatch").write_text(script, encoding="utf-8")
    (work / "grades").mkdir()
    job = _slurm(env | {"PWD": str(work)}, "sbatch", "--parsable", f"--chdir={work}", str(work / "grade.sbatch"))
    job = job.strip().split(";")[0]
    merge = _slurm(env, "sbatch", "--parsable", f"--chdir={work}", f"--dependency=afterany:{job}", "--wrap",
                   "course gradebook merge grades/shard-*").strip().split(";")[0]
    deadline = time.monotonic() + 1200
    while _slurm(env, "squeue", "-h", "-j", f"{job},{merge}").strip():
        assert time.monotonic() < deadline, _slurm(env, "squeue")
        time.sleep(1)
    logs = {p.name: p.read_text(errors="replace") for p in work.glob("slurm-*.out")}
    assert sorted(p.name for p in (work / "grades").glob("shard-*")) == [f"shard-{k}" for k in
                                                                          range(1, SHARDS + 1)], logs
    merged = work / "grades" / "gradebook.csv"
    assert merged.is_file(), logs
    assert merged.read_bytes() == (work / "single" / "gradebook.csv").read_bytes(), logs
