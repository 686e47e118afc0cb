"""Mistakes get the one message that names them, and no other check blames the learner for them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from course.engine.runner import grade_many
from course.registry import load_course

REPO = Path(__file__).resolve().parents[2]
# (exercise, wrong variant) -> (the only checks that may fail, a pattern their message must match)
CASES = {
    ("update_with_donate", "donates_delta"): ({"test_state_consumed"}, r"donated the second argument"),
    ("update_with_donate", "donates_delta_first"): ({"test_state_consumed"}, r"donated the second argument"),
    ("update_with_donate", "partial_jit_per_call"): ({"test_helper_built_once"}, r"builds 1 new jax\.jit"),
    ("ref_reads_writes", "square_plus_other_kernel"): (
        {"test_square_plus_in_pallas_call", "test_square_plus_one_load"},
        r"computes `add` at line \d+ outside its `pallas_call`",
    ),
}


@pytest.mark.slow
def test_each_mistake_is_named_once(tmp_path: Path) -> None:
    """Each listed wrong variant fails only the checks about its mistake, saying what it is."""
    course = load_course(REPO)
    pairs = []
    for name, variant in CASES:
        exercise = course.get(name)
        dest = tmp_path / variant / exercise.stub_rel
        dest.parent.mkdir(parents=True)
        dest.write_bytes((exercise.wrong_dir / f"{variant}.py").read_bytes())
        pairs.append((exercise, dest))
    for (key, (allowed, pattern)), result in zip(CASES.items(), grade_many(pairs, jobs=2), strict=True):
        failing = {c.id: c.message for c in result.checks if c.status != "passed"}
        assert failing and set(failing) <= allowed, (key, failing)
        assert any(re.search(pattern, m) for m in failing.values()), (key, failing)
