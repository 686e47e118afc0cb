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
    # named_ref: what a load brought in, what a write loaded, the selector that raised.
    ("named_ref", "ints_after_load"): (
        {"test_read_one_load"}, r"loads shape \(4, 3, 3\).*36 elements for the 9 selected"),
    ("named_ref", "loads_selection_to_write"): (
        {"test_write_one_store"}, r"loads the selection it is about to overwrite"),
    ("named_ref", "no_ellipsis"): ({"test_reads", "test_writes"}, r"^`r\[\.\.\.\]` raised TypeError: .* line \d+"),
    # shard_and_reduce: how much travels, the shape alone, bfloat16, pmean, every device's copy.
    ("shard_and_reduce", "psum_column_sums"): ({"test_psum_both_axes"}, r"adds 4 numbers per device \(\(4,\)\)"),
    ("shard_and_reduce", "keepdims_mean"): (
        {"test_mean_values", "test_mean_replicated"}, r"shape \(1, 1\).*only the shape is not"),
    ("shard_and_reduce", "bfloat16_psum"): ({"test_mean_values"}, r"adds bfloat16 partial sums"),
    ("shard_and_reduce", "pmean_of_sums"): (
        {"test_mean_values"}, r"the mean divided by 8.*`lax\.pmean` already divides"),
    ("shard_and_reduce", "mean_on_first_device"): (
        {"test_mean_replicated"}, r"device 0 holds \S+; devices 1, 2, 3, 4, 5, 6, 7 hold 0"),
    # ring_allreduce: each test_values failure names its own cause; tuples, open rings, axis names.
    ("ring_allreduce", "bfloat16_transfers"): ({"test_values"}, r"sends bfloat16 chunks"),
    ("ring_allreduce", "gather_store_index"): (
        {"test_values"}, r"the all-gather stores what arrives at the wrong index"),
    ("ring_allreduce", "no_wraparound"): (
        {"test_values", "test_one_direction"}, r"^The ppermute at line \d+ has no pair 7→0"),
    ("ring_allreduce", "tuple_of_chunks"): ({"test_chunk_per_step"}, r"It is given 8 arrays at once"),
    ("ring_allreduce", "hard_coded_axis"): (
        {"test_values", "test_sharding_kept", "test_only_collective_permutes", "test_one_direction",
         "test_fourteen_steps", "test_chunk_per_step"},
        r"names the mesh axis 'ring', but the mesh it is given has the axes \('peers',\)"),
    # sharded_donated_step: which call built the jit, a jit kept per learning rate.
    ("sharded_donated_step", "lazy_build"): ({"test_jit_built_once"}, r"the first call of `sgd_step` built 1 jitted"),
    ("sharded_donated_step", "lru_per_lr"): (
        {"test_no_compile_after_warmup", "test_jit_built_once"}, r"kept per learning rate \(in an lru_cache"),
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
