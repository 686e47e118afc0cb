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
    # Part 5: mistakes only the compiler or the jaxpr can see, each named for what it is.
    ("scan_layers", "scan_batch"): (
        {"test_one_loop_over_layers", "test_jaxpr_size_constant", "test_compiled_size_constant"},
        r"runs 16 times, over the 16 rows of x",
    ),
    ("scan_layers", "unroll_full"): ({"test_compiled_size_constant"}, r"is fully unrolled \(`unroll=True`"),
    ("remat_policy", "misspelt_name"): ({"test_no_matmul_recomputed"}, r"recomputes 1 matmul\(s\).*names 'hiden'"),
    ("remat_policy", "whole_loss"): (
        {"test_memory_budget_loss_and_grads", "test_memory_budget_min_memory"},
        r"61\.3 MiB.*wraps the whole scan: a policy does not reach inside a scan",
    ),
    ("remat_policy", "grads_elsewhere"): (
        {"test_memory_budget_loss_and_grads", "test_memory_budget_min_memory", "test_no_matmul_recomputed"},
        r"No checkpoint reaches the scan that computes the gradient",
    ),
    ("grad_accumulation", "micro_size_swapped"): (
        {"test_loop_over_microbatches", "test_memory_scales_with_microbatch"},
        r"runs 512 times for a batch of 2048 rows; it should run num_micro=4 times",
    ),
    ("grad_accumulation", "split_stack_copy"): (
        {"test_memory_scales_with_microbatch"}, r"makes float32\[16, 512, 64\], a copy of the whole batch",
    ),
    ("grad_accumulation", "no_divide"): ({"test_values"}, r"It is num_micro=4 times the mean"),
    # Part 6: what the devices exchange, read from the compiled HLO and the learner's jaxpr.
    ("fsdp_step", "columns"): ({"test_shard_params"}, r"is sharded P\(None, 'fsdp'\), expected P\('fsdp'\)"),
    ("fsdp_step", "sum_of_local_means"): (
        {"test_loss_values", "test_grads_values"}, r"8 times the right loss: each device took the mean of its own rows",
    ),
    ("fsdp_step", "psum_then_slice"): (
        {"test_grads_reduce_scattered"}, r"makes a psum of the whole b1 gradient at line \d+: mine = ",
    ),
    ("fsdp_step", "gathers_batch"): ({"test_batch_stays_sharded"}, r"all-gathers f32\[48,24\], the whole batch x"),
    ("fsdp_step", "local_means_unsummed"): (
        {"test_loss_values"}, r"is not one number: the 8 devices hold .*\(each the mean of that device's own rows\)",
    ),
    ("fsdp_step", "bias_left_sharded"): (
        {"test_traceable", "test_loss_values", "test_grads_values", "test_loss_replicated", "test_grads_sharded",
         "test_batch_stays_sharded", "test_grads_reduce_scattered"},
        r"combines arrays whose shardings do not fit together at fsdp_step\.py line 18",
    ),
    ("tensor_parallel_mlp", "b2_in_psum"): ({"test_values"}, r"plus 7 more copies of b2"),
    ("tensor_parallel_mlp", "no_out_sharding"): (
        {"test_traceable", "test_values", "test_output_replicated", "test_one_all_reduce", "test_no_other_collectives",
         "test_float32_sum"},
        r"multiplies over a dimension that is split across devices at tensor_parallel_mlp\.py line 7",
    ),
    ("tensor_parallel_mlp", "no_psum_unchecked"): (
        {"test_values", "test_one_all_reduce"}, r"The devices hold different \(B, D\) arrays while the result claims",
    ),
    ("tensor_parallel_mlp", "pmean"): ({"test_values"}, r"averaged \(pmean\), not added"),
    ("tensor_parallel_mlp", "w1_rows"): (
        {"test_one_all_reduce", "test_no_other_collectives"},
        r"runs 2 all-reduces: f32\[12,64\] \(the \(B, F\) hidden activations\)",
    ),
    ("tensor_parallel_mlp", "bfloat16_psum"): ({"test_values", "test_float32_sum"}, r"psum of bfloat16 values at line"),
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
