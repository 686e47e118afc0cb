"""The real course is sound: `course validate` over the repository exits 0 and prints its table."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from course.cli import app

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_course_validates() -> None:
    """Every stub fails, every solution passes, every wrong variant fails the check it names."""
    env = {"COURSE_NO_PROGRESS": "1", "COURSE_ROOT": None, "COURSE_WORKSPACE": None, "COURSE_DEBUG": None}
    result = CliRunner().invoke(app, ["validate", "--course", str(REPO)], env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "Validating" in result.output and "hold." in result.output, result.output
