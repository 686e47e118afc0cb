"""Rendering of a graded exercise: each failure's reason sits under its check, a shared cause once."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from course import ui
from course.engine.verdict import CheckResult, ExerciseResult
from course.ui import views


def _render(result: ExerciseResult, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The lines `result_block` prints, without colour."""
    buffer = io.StringIO()
    monkeypatch.setattr(ui, "out", Console(file=buffer, width=200, color_system=None))
    views.result_block(result, "ex.py")
    return buffer.getvalue().splitlines()


def _check(name: str, status: str, message: str = "") -> CheckResult:
    """A one-point check."""
    return CheckResult(name, f"title {name}", status, 1.0 if status == "passed" else 0.0, 1.0, message)


def test_single_failure_reason_under_its_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """A lone failing check has its reason on the next line, not at the end."""
    result = ExerciseResult(
        "ex", "failed", checks=[_check("a", "passed"), _check("b", "failed", "loads x_ref 3 times")]
    )
    lines = _render(result, monkeypatch)
    where = next(i for i, line in enumerate(lines) if "title b" in line)
    assert "loads x_ref 3 times" in lines[where + 1]


def test_shared_cause_said_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """When every failure has one cause (a syntax error), it is printed once, after the checks."""
    checks = [_check("a", "failed", "syntax error at line 1"), _check("b", "failed", "syntax error at line 1")]
    lines = _render(ExerciseResult("ex", "failed", checks=checks), monkeypatch)
    assert sum("syntax error at line 1" in line for line in lines) == 1
    assert lines.index(next(line for line in lines if "syntax error" in line)) > 2


def test_markup_in_learner_text_is_not_interpreted(monkeypatch: pytest.MonkeyPatch) -> None:
    """Square brackets in a message are shown as written, never as rich markup."""
    result = ExerciseResult("ex", "failed", checks=[_check("a", "failed", "x_ref[:, :4] [bold]not bold[/bold]")])
    assert any("x_ref[:, :4] [bold]not bold[/bold]" in line for line in _render(result, monkeypatch))


def test_repeated_reason_not_repeated(monkeypatch: pytest.MonkeyPatch) -> None:
    """Consecutive checks failing for the same reason print it once, then point back to it."""
    checks = [_check("a", "failed", "not written yet"), _check("b", "failed", "not written yet")]
    checks.append(_check("c", "failed", "no jitted helper"))
    lines = _render(ExerciseResult("ex", "failed", checks=checks), monkeypatch)
    assert sum("not written yet" in line for line in lines) == 1
    assert sum("(the same reason as above)" in line for line in lines) == 1


def test_long_reasons_wrap_at_words_under_their_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """A long title and message wrap at word boundaries, indented, with no trailing spaces."""
    title_words = " ".join(f"word{i}" for i in range(30))
    message = " ".join(f"reason{i}" for i in range(40))
    check = CheckResult("a", title_words, "failed", 0.0, 1.0, message)
    buffer = io.StringIO()
    monkeypatch.setattr(ui, "out", Console(file=buffer, width=60, color_system=None))
    views.result_block(ExerciseResult("ex", "failed", checks=[check]), "ex.py")
    lines = buffer.getvalue().splitlines()
    assert all(len(line) <= 60 and line == line.rstrip() for line in lines), lines
    words = buffer.getvalue().split()
    assert all(w in words for w in (title_words + " " + message).split())
    title_lines = [line for line in lines if "word" in line]
    assert len(title_lines) > 1 and len({len(line) - len(line.lstrip()) for line in title_lines[1:]}) == 1
    assert all(line.startswith(" " * 6) for line in lines if "reason" in line)
