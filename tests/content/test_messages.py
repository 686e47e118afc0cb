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
    # Part 4: subtle mistakes that only one check sees, and the messages that explain the others.
    ("tiled_matmul", "no_preferred_type"): (
        {"test_mxu_gets_input_dtype_and_returns_float32"},
        r"line \d+: acc_ref\[\.\.\.\] \+= jnp\.dot\(x_ref\[\.\.\.\], y_ref\[\.\.\.\]\) returns bfloat16",
    ),
    ("tiled_matmul", "upcast_operands"): (
        {"test_mxu_gets_input_dtype_and_returns_float32"}, r"multiplies float32 by float32",
    ),
    ("tiled_matmul", "f32_out_cast_in_wrapper"): (
        {"test_kernel_does_the_work"},
        r"made by `convert_element_type` \(line \d+: return out\.astype\(x\.dtype\)\) after the kernel",
    ),
    ("tiled_matmul", "zero_every_step"): (
        {"test_values_float32", "test_values_bfloat16_accumulate_in_float32"},
        r"the product of the last 256 columns of K only: the accumulator is reset at every K step",
    ),
    ("flash_attention", "normalize_every_step"): (
        {"test_normalized_once_at_the_end"}, r"divides a \[128, 64\] array at KV step 0 of 8",
    ),
    ("flash_attention", "bf16_scratch"): (
        {"test_softmax_state_is_float32_vmem"}, r"keeps softmax state in a bfloat16 ref",
    ),
    ("flash_attention", "no_max_subtraction"): (
        {"test_values_large_logits"}, r"100% of the output is NaN or inf\. Here the logits reach 150",
    ),
    ("flash_attention", "no_acc_rescale"): (
        {"test_values_float32", "test_values_large_logits", "test_values_max_in_a_later_block", "test_values_bfloat16"},
        r"rescales l but not acc",
    ),
    ("double_buffer", "wait_after_start"): (
        {"test_next_block_in_flight_during_compute"},
        r"block 0 is used at line \d+: .* while no copy of block 1 is in flight \(its copy starts later",
    ),
    ("double_buffer", "swapped_semaphore"): (
        {"test_values_when_copies_land_at_wait", "test_values_when_copies_land_at_start",
         "test_every_copy_waited_on_its_own_semaphore", "test_slot_untouched_while_in_flight"},
        r"waits on sems\[0\], which no copy in flight signals .*the grader did not run your kernel",
    ),
    ("double_buffer", "wait_whole_x"): (
        {"test_values_when_copies_land_at_wait", "test_values_when_copies_land_at_start",
         "test_every_copy_waited_on_its_own_semaphore", "test_slot_untouched_while_in_flight"},
        r"waits for 20480 bytes on sems\[0\], but only 4096 are landed or in flight",
    ),
    ("double_buffer", "one_slot"): (
        {"test_values_when_copies_land_at_start", "test_slot_untouched_while_in_flight"},
        r"it holds 2 \* block 1: the slot was refilled before block 0 was computed",
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
