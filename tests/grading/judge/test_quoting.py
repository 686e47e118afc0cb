"""Tests of `judge.quoting`: the learner's line quoted in a message."""

from __future__ import annotations

from pathlib import Path

from course.grading.judge.quoting import quote_line


def test_lines_are_quoted_trimmed_and_cut(tmp_path: Path) -> None:
    """The line's text follows its number; a missing text leaves the number; no line gives ''; long lines are cut."""
    path = tmp_path / "learner.py"
    path.write_text("x = 1\n    acc_ref[...] += jnp.dot(a, b)   \n" + "y = " + "1 + " * 60 + "1\n")
    assert quote_line(path, 2) == "line 2: acc_ref[...] += jnp.dot(a, b)"
    assert quote_line(path, 40) == "line 40" and quote_line(path, None) == "" and quote_line(None, 3) == "line 3"
    assert quote_line(path, 3).endswith("...") and len(quote_line(path, 3)) < 120
    path.write_text("changed = True\n")
    assert quote_line(path, 1) == "line 1: changed = True"
