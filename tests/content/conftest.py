"""The real course's content tests share one `course validate` run: each of its gradings is paid once."""

from __future__ import annotations

from pathlib import Path

import pytest

from course.instructor.validate import ValidationReport, validate
from course.registry import load_course

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def validation() -> ValidationReport:
    """`course validate` over the whole course, graded two at a time: its verdicts, and the gradings behind them."""
    return validate(load_course(REPO), [], jobs=2)
