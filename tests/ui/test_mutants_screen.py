"""`course validate --mutants`'s table fits a terminal of 80 columns, and one of 60: every header and every
exercise's name whole, every line within the width, and the short headers explained when they are used."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from course import ui
from course.instructor.mutants import Mutant
from course.instructor.mutation import STATUSES, ExerciseMutation, MutationReport, Outcome
from course.registry import load_course
from course.ui import mutants as view

REPO = Path(__file__).resolve().parents[2]


def _run() -> MutationReport:
    """A whole-course run of the real course with wide counts: 3 digits of mutants, 2 of survivors."""
    course = load_course(REPO)
    exercises = []
    for k, e in enumerate(course.exercises):
        entry = ExerciseMutation(e.name, e.position)
        statuses = ["killed"] * (90 + k) + ["survived"] * 12 + list(STATUSES)
        entry.outcomes = [Outcome(Mutant(e.name, n, "arith", "a + b: + -> -", 1, "", "- a + b\n+ a - b"), status)
                          for n, status in enumerate(statuses, start=1)]
        exercises.append(entry)
    return MutationReport(course.meta.title, exercises, seed=7, per_operator=6, duration_s=1000.0)


@pytest.mark.parametrize("width", [200, 80, 60])
def test_the_table_fits_with_whole_headers_and_names(width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """No line wider than the terminal, no header or name cut short; short headers come with their legend."""
    buffer = io.StringIO()
    monkeypatch.setattr(ui, "out", Console(file=buffer, width=width, force_terminal=True, color_system=None,
                                           highlight=False, emoji=False))
    run = _run()
    view.report(run)
    lines = buffer.getvalue().split("\n")
    assert not [line for line in lines if len(line.rstrip()) > width]
    lines = [line.replace("│", " ").replace("┃", " ") for line in lines]  # the roomy layout's rules
    header = next(line for line in lines if "exercise" in line)
    headers = view.COLUMNS if width > 80 else view.SHORT
    assert header.split() == [word for h in headers for word in h.split()], header
    rows = {line.split()[1]: line.split() for line in lines if line.split()[:1] and line.split()[0].isdigit()
            and len(line.split()) == len(view.SHORT)}
    assert set(rows) == {e.name for e in run.exercises}
    assert rows["tiled_matmul"][2:] == ["120", "103", "13", "1", "1", "1", "1", "89%"]
    assert (view.LEGEND.split(",")[0] in buffer.getvalue()) is (width <= 80)
