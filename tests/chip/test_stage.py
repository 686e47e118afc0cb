"""One learner's file on the chip, in a process of its own: what comes back, and what a file that breaks it costs.

CI has no TPU: here the CPU stands in for the chip (`COURSE_CHIP_CPU=1`, kernels interpreted), which
exercises everything around the chip. What only a TPU can say is measured by benchmarks/bench_chip.py.
"""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path

import pytest

from course.chip import stage
from course.registry import Exercise, ExerciseMeta

KERNEL = '''
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def _double(x_ref, o_ref):
    o_ref[...] = x_ref[...] * 2


def double(x):
    {before}
    return pl.pallas_call(_double, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)
'''


@pytest.fixture(autouse=True)
def stand_in(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CPU stands in for the chip."""
    monkeypatch.setenv("COURSE_CHIP_CPU", "1")


def _exercise(tmp_path: Path, **chip: object) -> Exercise:
    """A made-up kernel exercise whose `[chip]` table is `chip`."""
    meta = ExerciseMeta(title="double", topic="kernels", chip={"calls": ["double(f32(8, 128))"], **chip})
    return Exercise(name="double", position=1, meta=meta, root=tmp_path)


def _file(tmp_path: Path, before: str = "pass", name: str = "double.py") -> Path:
    """A learner's file with `before` run at the start of each call of `double`."""
    path = tmp_path / "mine" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(textwrap.dedent(KERNEL).format(before=before), encoding="utf-8")
    return path


@pytest.mark.slow
def test_a_right_kernel_matches_and_a_killed_one_is_that_files_failure_alone(tmp_path: Path) -> None:
    """A kernel that ends its process mid-call fails in a sentence; the next file gets a fresh process."""
    exercise = _exercise(tmp_path)
    killed = stage.run(exercise, _file(tmp_path, "import os; os._exit(7)"), "check")
    assert not killed.ok and killed.calls == []
    assert "exited with code 7 before reporting" in killed.error
    fine = stage.run(exercise, _file(tmp_path), "check")
    assert fine.ok and [c["status"] for c in fine.calls] == ["matched"]
    assert fine.chip == "TPU v5e" and fine.to_json()["calls"][0]["call"] == "double(f32(8, 128))"


@pytest.mark.slow
def test_what_finished_before_a_halt_is_kept(tmp_path: Path) -> None:
    """The first call matches; the second kills its process: the first stays, the death is said."""
    exercise = _exercise(tmp_path, calls=["double(f32(8, 128))", "double(f32(16, 128))"])
    path = _file(tmp_path, "import os\n    if x.shape[0] == 16: os.kill(os.getpid(), 9)")
    report = stage.run(exercise, path, "check")
    assert [c["status"] for c in report.calls] == ["matched"]
    assert "killed by signal 9" in report.error and not report.ok


@pytest.mark.slow
def test_a_file_that_cannot_be_imported_and_one_that_hangs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An import error is said as the file's; a kernel that never returns is stopped at the wall cap."""
    exercise = _exercise(tmp_path)
    broken = _file(tmp_path)
    broken.write_text("raise ValueError('nope')\n", encoding="utf-8")
    report = stage.run(exercise, broken, "check")
    assert report.error.startswith("your file could not be imported for the chip") and "nope" in report.error
    monkeypatch.setitem(stage.WALL_S, "check", 10.0)
    hung = stage.run(exercise, _file(tmp_path, "import time; time.sleep(600)"), "check")
    assert "took longer than 10 s and was stopped" in hung.error
    assert hung.seconds < 120


@pytest.mark.slow
def test_bench_times_the_kernel_against_xla_and_checks_its_values(tmp_path: Path) -> None:
    """Timed on the stand-in: both clocks reported, XLA's op beside it, the values checked after timing."""
    exercise = _exercise(tmp_path, bench=["double(f32(64, 128))"], math="double")
    report = stage.run(exercise, _file(tmp_path), "bench", budget_s=0.2)
    (call,) = report.calls
    assert call["status"] == "timed" and call["values"]["status"] == "matched"
    assert call["kernel"]["clock"] == "wall" and call["kernel"]["repeats"] >= 5
    assert call["xla"]["median_s"] > 0 and call["xla_op"] == "2 * x"
    assert call["bytes"] == 2 * 64 * 128 * 4 and call["estimate"]["kernels"][0]["grid"] == []
    wrong = stage.run(exercise, _file(tmp_path, "x = x + 1"), "bench", budget_s=0.2)
    assert wrong.calls[0]["status"] == "differs" and "after timing" in wrong.calls[0]["message"]


@pytest.mark.slow
def test_estimate_needs_no_chip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Estimating traces on the CPU and says which generation it is for."""
    monkeypatch.delenv("COURSE_CHIP_CPU")
    exercise = dataclasses.replace(_exercise(tmp_path, bench=["double(f32(1024, 128))"], math="double"))
    report = stage.run(exercise, _file(tmp_path), "estimate", tpu="v6e")
    (call,) = report.calls
    assert report.estimated and report.chip == "TPU v6e"
    assert call["status"] == "estimated" and call["estimate"]["kernels"][0]["hbm_bytes"] == 2 * 1024 * 128 * 4


@pytest.mark.slow
def test_a_lock_the_machine_refuses_is_no_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A temporary folder whose lock filelock refuses (a TPU VM under gVisor did): the file is still run."""
    import filelock

    class Refused:
        """A lock whose taking fails as filelock's ownership check does there."""

        def __init__(self, path: str) -> None:
            self.path = path

        def acquire(self) -> None:
            raise PermissionError(13, "lock file belongs to uid 65534", self.path)

    monkeypatch.setattr(filelock, "FileLock", Refused)
    report = stage.run(_exercise(tmp_path), _file(tmp_path), "check")
    assert report.ok and [c["status"] for c in report.calls] == ["matched"]


def test_the_learners_file_loads_with_the_strict_interpreter_as_its_default_where_there_is_no_chip(
        tmp_path: Path) -> None:
    """The chip's child imports JAX before the learner's file, so that, estimating on a machine with no TPU, a
    kernel that names no interpreter runs under the strict one, as in a grading (a fresh process: the default
    is global)."""
    import subprocess
    import sys

    learner = tmp_path / "kernel.py"
    learner.write_text("X = 1\n", encoding="utf-8")
    probe = ("import sys; from pathlib import Path; from course.chip import child; child._load(Path(sys.argv[1])); "
             "from jax._src import config; print(config.pallas_tpu_interpret_mode_context_manager.value)")
    done = subprocess.run([sys.executable, "-c", probe, str(learner)], capture_output=True, text=True, check=False,
                          env={"JAX_PLATFORMS": "cpu", "PATH": ""}, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "InterpretParams" in done.stdout, done.stdout
