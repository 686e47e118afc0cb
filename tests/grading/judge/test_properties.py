"""Tests of `judge.properties`: seeded, bounded Hypothesis runs told as one reproduction."""

from __future__ import annotations

import os
import time
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import strategies as st

from course.grading import CheckFailed, check
from course.grading.judge.properties import assert_gave, check_property


def small_sum(xs: list[int]) -> None:
    """Fails when the sum reaches 100."""
    check(sum(xs) < 100, f"gave {sum(xs)}, expected less than 100")


def _message(seed: int, **kwargs: object) -> str:
    """The failure message of `small_sum` over lists of small ints."""
    with pytest.raises(CheckFailed) as info:
        check_property(small_sum, st.lists(st.integers(0, 60)), seed=seed, rule="Sums stay small.",
                       reproduce=lambda xs: f"total({xs})", **kwargs)
    return str(info.value)


def test_shrunk_case_is_one_reproducible_line() -> None:
    """The message holds the rule, the shrunk case as code, and what the case gave."""
    text = _message(1)
    assert text.startswith("Sums stay small. The smallest failing case found: `total([")
    assert "gave 100, expected less than 100" in text and "`--seed`" in text
    assert "\n" not in text


def test_same_seed_same_case_and_no_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A seed gives the same shrunk case every time, and nothing is written where the grader runs."""
    monkeypatch.chdir(tmp_path)
    assert _message(7) == _message(7)
    assert os.listdir(tmp_path) == []


def test_passing_property_is_silent_and_bounded() -> None:
    """A property that holds runs at most `max_examples` cases and returns."""
    seen: list[int] = []
    check_property(seen.append, st.integers(), seed=3, rule="R.", max_examples=7)
    assert 0 < len(seen) <= 7


def test_shrinking_stops_at_its_time_budget() -> None:
    """A slow property stops shrinking once its budget is spent and still reports a failing case: past the
    budget no case runs, so 0.05 s of budget holds at most 3 runs of at least 0.02 s after the first
    failure, however busy the machine (a slower one runs fewer)."""
    runs: list[bool] = []  # whether each run of the property failed

    def slow(xs: list[int]) -> None:
        time.sleep(0.02)
        failed = sum(xs) >= 100
        runs.append(failed)
        small_sum(xs)

    with pytest.raises(CheckFailed, match="gave [0-9]+, expected less than 100"):
        check_property(slow, st.lists(st.integers(0, 60), min_size=6), seed=1, rule="R.",
                       shrink_seconds=0.05, max_examples=20)
    assert True in runs and len(runs) - runs.index(True) - 1 <= 3, runs


def test_learner_exceptions_are_told_with_line_and_explanation() -> None:
    """Any exception from the code under test fails the case, with its line and an explanation."""
    def prop(n: int) -> None:
        if n > 3:
            raise IndexError("index out of range")

    with pytest.raises(CheckFailed) as info:
        check_property(prop, st.integers(0, 10), seed=5, rule="R.", path=Path(__file__),
                       explain=lambda exc: "count from the view" if isinstance(exc, IndexError) else None)
    text = str(info.value)
    assert "`4` raised IndexError: index out of range at test_properties.py line" in text
    assert "`raise IndexError" in text and ": count from the view" in text


def test_assert_gave_shows_small_arrays_whole_and_large_ones_by_first_difference() -> None:
    """Small results are shown whole on one line; large ones by their first difference."""
    assert_gave(jnp.arange(3.0), np.arange(3.0, dtype=np.float32))
    whole = r"^gave \[\[0\., 1\.\], \[2\., 9\.\]\], expected \[\[0\., 1\.\], \[2\., 3\.\]\]$"
    with pytest.raises(CheckFailed, match=whole):
        assert_gave(jnp.array([[0.0, 1.0], [2.0, 9.0]]), np.arange(4, dtype=np.float32).reshape(2, 2))
    with pytest.raises(CheckFailed, match=r"^gave a wrong value: differs .* first is at index \[7\]"):
        assert_gave(jnp.arange(30.0).at[7].set(-1), np.arange(30, dtype=np.float32))
    with pytest.raises(CheckFailed, match=r"has shape \(2,\), expected \(3,\)"):
        assert_gave(jnp.zeros(2), np.zeros(3, np.float32))
