"""Scratch folders go away whole, even while a process that was just killed still writes into them."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from course import files


def test_a_folder_written_into_during_its_removal_is_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A late write (a dying grading's cache file) lands after the first `rmtree`; the folder still goes."""
    folder = tmp_path / "course-grade-x"
    (folder / "report").mkdir(parents=True)
    calls = []
    real = shutil.rmtree

    def late_writer(path: Any, ignore_errors: bool = False) -> None:
        real(path, ignore_errors=ignore_errors)
        calls.append(path)
        if len(calls) == 1:  # the killed process's last write, after the removal read the folder
            (Path(path) / "__pycache__").mkdir(parents=True)

    monkeypatch.setattr(shutil, "rmtree", late_writer)
    files.remove_folder(folder)
    assert not folder.exists() and len(calls) == 2


def test_nothing_to_remove_is_no_error(tmp_path: Path) -> None:
    """A folder never made (a stop before it was) or already gone is nothing to do."""
    files.remove_folder(None)
    files.remove_folder(tmp_path / "gone")
    assert not (tmp_path / "gone").exists()
