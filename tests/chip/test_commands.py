"""`course bench` and the chip's part of `course check`, run as a learner runs them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from course.cli import app

COURSE = Path(__file__).resolve().parents[2]


def _workspace(tmp_path: Path, cli: CliRunner, *solved: str) -> Path:
    """A fresh workspace of the course with the reference solutions of `solved` in place."""
    ws = tmp_path / "ws"
    assert cli.invoke(app, ["--course", str(COURSE), "init", str(ws)]).exit_code == 0
    for folder in solved:
        name = folder.split("_", 1)[1]
        shutil.copy(COURSE / "solutions" / folder / f"{name}.py", ws / "exercises" / folder / f"{name}.py")
    return ws


@pytest.mark.slow
def test_bench_without_a_chip_estimates_and_says_so(cli: CliRunner, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """No TPU: each lesson size estimated for the generation asked, labelled an estimate; a stub is not timed."""
    monkeypatch.setenv("COURSE_CHIP", "0")
    ws = _workspace(tmp_path, cli, "13_tiled_matmul")
    args = ["--course", str(COURSE), "--workspace", str(ws), "bench"]
    shown = cli.invoke(app, [*args, "tiled_matmul", "--tpu", "v6e"])
    assert shown.exit_code == 0, shown.output
    assert "an estimate for a TPU v6e, not a measurement" in shown.output
    assert "matmul(bf16(4096, 4096), bf16(4096, 4096))" in shown.output and "roofline" in shown.output
    data = json.loads(cli.invoke(app, [*args, "tiled_matmul", "--json"]).stdout)
    (report,) = data["exercises"]
    assert report["estimated"] and report["chip"] == "TPU v5e" and len(report["calls"]) == 2
    assert all(c["status"] == "estimated" and c["estimate"]["seconds"] > c["roofline_s"] for c in report["calls"])
    stub = cli.invoke(app, [*args, "flash_attention", "--json"])
    assert stub.exit_code == 1 and "still the stub" in json.loads(stub.stdout)["exercises"][0]["error"]
    wrong = cli.invoke(app, [*args, "update_with_donate"])
    assert wrong.exit_code == 2 and "has no kernel to time" in wrong.output
    assert cli.invoke(app, [*args, "--tpu", "v9"]).exit_code == 2
    assert not (ws / ".course" / "bench.json").exists()  # an estimate is no result to keep


@pytest.mark.slow
def test_check_on_a_tpu_adds_the_chips_words_after_the_verdict(cli: CliRunner, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """With a chip (the CPU standing in), `check` grades as always, then compiles and compares; --no-chip skips."""
    monkeypatch.setenv("COURSE_CHIP", "1")
    monkeypatch.setenv("COURSE_CHIP_CPU", "1")
    ws = _workspace(tmp_path, cli, "06_alias_zero_init")
    args = ["--course", str(COURSE), "--workspace", str(ws), "check", "alias_zero_init"]
    shown = cli.invoke(app, args)
    assert shown.exit_code == 0, shown.output
    assert "On the chip, TPU v5e" in shown.output and "compiled, and matches the CPU's result" in shown.output
    assert shown.output.index("On the chip") < shown.output.index("Points:")  # before the next step
    data = json.loads(cli.invoke(app, [*args, "--json"]).stdout)
    assert data["exercises"][0]["chip"]["ok"] is True
    quiet = cli.invoke(app, [*args, "--no-chip", "--json"])
    assert "chip" not in json.loads(quiet.stdout)["exercises"][0]


@pytest.mark.slow
def test_a_notebook_gets_the_tables_and_a_chart(cli: CliRunner, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """`%course bench NAME` returns a report that shows as text, and in Jupyter with a chart beside it."""
    from course import notebook

    monkeypatch.setenv("COURSE_CHIP", "0")
    ws = _workspace(tmp_path, cli, "15_double_buffer")
    monkeypatch.setenv("COURSE_ROOT", str(COURSE))
    monkeypatch.setenv("COURSE_WORKSPACE", str(ws))
    report = notebook._line("bench double_buffer")
    assert isinstance(report, notebook.BenchReport)
    assert "stream_scale(f32(65536, 128))" in repr(report) and "GB/s" in repr(report)
    assert '<img src="data:image/png;base64,' in report._repr_html_()
    assert report.to_json()["exercises"][0]["calls"][0]["status"] == "estimated"
