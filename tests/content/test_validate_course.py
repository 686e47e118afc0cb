"""The real course is sound: `course validate` over the repository holds, and its table says so."""

from __future__ import annotations

import pytest

from course.instructor.validate import ValidationReport
from course.ui import instructor as views


@pytest.mark.slow
def test_course_validates(validation: ValidationReport, capsys: pytest.CaptureFixture[str]) -> None:
    """Every stub fails, every solution passes, every wrong variant fails the check it names."""
    views.validation(validation)
    shown = capsys.readouterr()
    problems = {e.name: e.problems for e in validation.exercises if e.problems}
    assert validation.sound and validation.exit_code == 0, (problems, validation.problems, shown.out + shown.err)
    assert "hold." in shown.out + shown.err, shown
    assert all(e.gradings for e in validation.exercises), "an exercise was not graded"
