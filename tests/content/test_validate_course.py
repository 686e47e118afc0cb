"""The real course is sound, and says so: `course validate` holds for each exercise, and each mistake
gets the one message that names it, with no other check blaming the learner for it.

Each exercise is validated apart, in a class of its own (`Test_<exercise>`, made below from course.toml):
pytest-xdist (`--dist loadscope`) hands each class to whichever worker is free, so the course's gradings
spread over both workers, and the run reports each exercise as it ends. Both tests of a class read one
validate run of its exercise (the class's `validation` fixture), so each grading is paid once.

The suite grades each exercise's stub, its solution and the wrong variants CASES lists (the mistakes
whose messages it holds to a pattern), which keeps it within its time on two cores;
`COURSE_VALIDATE=all pytest tests/content/test_validate_course.py` grades every wrong variant, as
`course validate` does (run it before a release, and after changing a grader).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from course.engine.parent.runner import start_worker
from course.instructor import checks
from course.instructor.validate import ValidationReport, validate
from course.registry import load_course
from course.ui import instructor as views

if TYPE_CHECKING:
    from course.engine.parent.isolation import Launcher

REPO = Path(__file__).resolve().parents[2]
COURSE = load_course(REPO)
# Two gradings at a time, as `course validate` runs on two cores: while the other test worker waits on a
# subprocess or a sleep, the second grading takes the core it leaves.
JOBS = 2


# (exercise, wrong variant) -> (the only checks that may fail, a pattern their message must match)
CASES = {
    # update_with_donate
    ("update_with_donate", "donates_delta"): ({"test_state_consumed"}, r"donated the second argument"),
    ("update_with_donate", "donates_delta_first"): ({"test_state_consumed"}, r"donated the second argument"),
    ("update_with_donate", "partial_jit_per_call"): (
        {"test_helper_built_once"},
        r"each of 3 calls of `update_with_donate` with float32\[32\] inputs built a new jitted wrapper",
    ),
    # jnp.where's own eager jit is not a compile of theirs; the backup is what is wrong, and is named.
    ("update_with_donate", "where_guard_backup"): (
        {"test_no_copy_before_donate"},
        r"line 13 copies `state` \(`copy`\) before donating it: a second float32\[64\] buffer",
    ),
    ("update_with_donate", "returns_old_from_jit"): (
        {"test_no_copy_before_donate"},
        r"line 19 calls `_step`, which returns `state` unchanged beside the result",
    ),
    # The helper is a lambda written on line 5 and called on line 10: the message points at the lambda.
    ("update_with_donate", "no_donation"): (
        {"test_state_consumed", "test_helper_aliases_state"},
        r"`<lambda>` \(line 5\) compiles with alias_size_in_bytes = 0",
    ),
    # An ahead-of-time program cannot be traced, so neither its aliasing nor the reuse behind a consumed
    # `state` can be read from its program.
    ("update_with_donate", "aot_per_shape"): (
        {"test_state_consumed", "test_helper_aliases_state", "test_helper_built_once"},
        r"calls an ahead-of-time compiled program",
    ),
    # `state` is gone after the call, but only because the file deleted it: no program reuses its buffer.
    ("update_with_donate", "deletes_state"): (
        {"test_state_consumed", "test_helper_aliases_state"},
        r"`state` was deleted by the call, but no jitted call of yours writes its result into `state`'s buffer",
    ),
    # A jit kept per length is built again for each new one, though one jit compiles once per shape by itself.
    ("update_with_donate", "lru_per_length"): (
        {"test_helper_built_once"},
        r"the first call with float32\[64\] inputs built 1 new jitted wrapper\(s\), after the calls with "
        r"float32\[32\] inputs had run: your jit is kept per length",
    ),
    # An empty `state` is donated like any other: a shortcut around the helper leaves it alive.
    ("update_with_donate", "empty_shortcut"): (
        {"test_state_consumed"}, r"for length 0, `state` is still alive after the call, though every longer",
    ),
    # aliasing_order
    ("aliasing_order", "two_loops_residual"): (
        {"test_residual_tanh_kernel_under_aliasing"},
        r"right with separate buffers\..*line 27 reads `x_ref\[0, :\]` after line 23 wrote `o_ref\[0, :\]`",
    ),
    ("aliasing_order", "chunked_swap_loop"): (
        {"test_swap_halves_kernel_under_aliasing"},
        r"line 20 reads `x_ref\[:, :32\]` after line 19 wrote `o_ref\[:, :32\]`",
    ),
    # The interpreter runs `jnp.flip`; lowered for a TPU, the kernel is refused in the lowering's own words.
    ("aliasing_order", "flip_in_kernel"): (
        {"test_lowers_for_tpu"},
        r"`swap_halves` runs `swap_halves_kernel` \(its `pallas_call` at line \d+\), which a TPU cannot compile: .*"
        r"line 14 is refused with \"Unimplemented primitive in Pallas TPU lowering for tc: rev\.\"",
    ),
    # compile_budget
    ("compile_budget", "reuses_largest_program"): (
        {"test_rows_run"},
        r"for a batch of 1 row, .* 1024 rows of work .* reused the program of an earlier, larger batch \(1000 rows\)",
    ),
    ("compile_budget", "jit_per_batch_size"): (
        {"test_compiles_per_batch_size"},
        r"both ran on 1024 rows, yet the second built a new jitted function of its own: your jits are made per "
        r"batch size",
    ),
    ("compile_budget", "floor_of_32"): (
        {"test_bucket_rule", "test_rows_run"},
        r"Your smallest bucket is 32 rows, and a floor may be at most 16",
    ),
    ("compile_budget", "lru_evicting_cache"): (
        {"test_compiles_per_batch_size"},
        r"built 4 jitted wrappers, again on call\(s\) 5, 10, 18 after an earlier call",
    ),
    ("ref_reads_writes", "square_plus_other_kernel"): (
        {"test_square_plus_in_pallas_call", "test_square_plus_one_load"},
        r"computes `add` at line \d+ outside its `pallas_call`",
    ),
    # ref_reads_writes: an addupdate is an addition; storing then adding writes the output twice.
    # An `addupdate` in a kernel is also what a TPU cannot compile: the lowering names the same line, and the
    # strict interpreter cannot run one on bfloat16 either.
    ("ref_reads_writes", "store_then_addupdate"): (
        {"test_add_kernel_loads_and_stores", "test_lowers_for_tpu", "test_add_values"},
        r"writes `o_ref` 2 times: a store at line \d+ and an `addupdate` at line \d+",
    ),
    # any_sync_copy: one wait for many strip copies, and a wait that would never return.
    ("any_sync_copy", "strips_one_wait"): (
        {"test_values", "test_dmas_waited"},
        r"line \d+ starts 3 DMAs on one semaphore \(\d+ bytes in all\), but the wait on it at line \d+ "
        r"waits for only \d+ bytes",
    ),
    ("any_sync_copy", "waits_twice"): (
        {"test_values", "test_dmas_waited"},
        r"line \d+ waits on `scratch\[1\]` for \d+ bytes that no copy started on its semaphore provides",
    ),
    # Two semaphores of one array count apart; a wait the reading leaves to the run is named as it runs.
    ("any_sync_copy", "first_half_waited_twice"): (
        {"test_values", "test_dmas_waited"},
        r"line 17 waits on `scratch\[1\]\.at\[0\]` for \d+ bytes that no copy started on its semaphore provides",
    ),
    ("any_sync_copy", "waits_again_on_first_step"): (
        {"test_values", "test_dmas_waited"},
        r"`\.wait\(\)` at line 17 of \w+\.py waits on a DMA semaphore for \d+ bytes, but it holds 0 "
        r"and no copy started on it is still in flight",
    ),
    # smem_scalar: whose compile, and the one mistake that explains every wrong row.
    ("smem_scalar", "jit_per_call"): (
        {"test_new_lengths_compile_nothing"},
        r"compiled your code 3 time\(s\) \(jit\(<lambda>\) x3\): the three calls built 3 new `jax\.jit`",
    ),
    ("smem_scalar", "jit_inside_call"): (
        {"test_new_lengths_compile_nothing"}, r"compiled nothing, but built 3 new `jax\.jit` wrapper\(s\)",
    ),
    ("smem_scalar", "trim_to_longest"): (
        {"test_new_lengths_compile_nothing"},
        r"compiled your code 3 time\(s\) \(jit\(_kernel_call\) x3\): the compiled program ran on a new shape",
    ),
    ("smem_scalar", "zeroes_block_every_step"): (
        {"test_values"},
        r"rows 0 and 2 hold 0 although their lengths are \[5, 16\], while the last row is right",
    ),
    ("smem_scalar", "loop_seeded_with_row0"): (
        {"test_values"},
        r"row 1 has length 0 but holds x\[1, 0\]: the sum starts from the first row",
    ),
    # alias_zero_init: reading the output block, an alias index off by a second table, a padded grid.
    # The values are judged apart from the code, so the message names the cause, not the line.
    ("alias_zero_init", "reads_output_first"): (
        {"test_values"},
        r"hold NaN in .*never copied in.* such as `o_ref\[\.\.\.\]` read before a store",
    ),
    ("alias_zero_init", "two_tables_alias_2"): (
        {"test_values", "test_output_aliased"},
        r"Your operands are \(table, table, x, zeros\): alias the zeros, operand 3",
    ),
    ("alias_zero_init", "padded_table_grid"): (
        {"test_grid_steps"},
        r"one step per entry of `blocks_ref` \(int32\[64, 2\]\), a table padded past the 3 listed",
    ),
    # named_ref: what a load brought in, what a write loaded, the selector that raised.
    ("named_ref", "ints_after_load"): (
        {"test_read_one_load"}, r"loads shape \(4, 3, 3\).*36 elements for the 9 selected"),
    ("named_ref", "loads_selection_to_write"): (
        {"test_write_one_store"}, r"loads the selection it is about to overwrite"),
    ("named_ref", "no_ellipsis"): ({"test_reads", "test_writes"}, r"^`r\[\.\.\.\]` raised TypeError: .* line \d+"),
    # slice_ref: an empty view at the end of an axis is a view, which JAX's ref slice refuses to start there.
    ("slice_ref", "range_bounds_slice"): (
        {"test_bounds_clamped"},
        r"`r\.slice\(\{'layer': slice\(6, 9\)\}\)\[\.\.\.\]` raised ValueError: Out of bound slice.*JAX refuses "
        r"a ref slice that starts at or past the end of its axis, even an empty one",
    ),
    ("slice_ref", "last_element_stop"): (
        {"test_bounds_clamped"},
        r"`r\.slice\(\{'layer': slice\(6, 9\)\}\)\[\.\.\.\]` raised ValueError: Out of bound slice",
    ),
    # shard_and_reduce: how much travels, the shape alone, bfloat16, pmean, every device's copy.
    ("shard_and_reduce", "psum_column_sums"): ({"test_psum_both_axes"}, r"adds 4 numbers per device \(\(4,\)\)"),
    ("shard_and_reduce", "keepdims_mean"): (
        {"test_mean_values", "test_mean_replicated"}, r"shape \(1, 1\).*only the shape is not"),
    # The judge sees values, not the jaxpr: the rounding is what names the narrower partial sums.
    ("shard_and_reduce", "bfloat16_psum"): (
        {"test_mean_values"}, r"close, but rounded: partial sums of a dtype narrower than float32"),
    ("shard_and_reduce", "pmean_of_sums"): (
        {"test_mean_values"}, r"the mean divided by 8.*`lax\.pmean` already divides"),
    ("shard_and_reduce", "mean_on_first_device"): (
        {"test_mean_replicated"}, r"device 0 holds \S+; devices 1, 2, 3, 4, 5, 6, 7 hold 0"),
    # ring_allreduce: each test_values failure names its own cause; tuples, open rings, axis names.
    ("ring_allreduce", "bfloat16_transfers"): (
        {"test_values"}, r"Every sum is close, but rounded: chunks sent in a narrower dtype than float32"),
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
    # Judged in the judge: every device's copy crosses the link, so copies of a P() result that differ still differ.
    ("sharded_donated_step", "skewed_replicated_scale"): (
        {"test_output_sharding"}, r"the new params\['scale'\] is sharded P\(\), but the devices that should hold the "
                                  r"same copy of it hold different values: device 0 holds"),
    # The params are gone, but only because the file deleted them: the judge finds no program reusing them.
    ("sharded_donated_step", "deletes_params"): (
        {"test_params_consumed", "test_alias_bytes"},
        r"were deleted by the step, but no jitted call of yours writes a new param into its buffer"),
    # Part 4: subtle mistakes that only one check sees, and the messages that explain the others.
    # A bfloat16 dot with no float32 result is also what a TPU's matrix unit refuses to lower.
    ("tiled_matmul", "no_preferred_type"): (
        {"test_mxu_gets_input_dtype_and_returns_float32", "test_lowers_for_tpu"},
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
        r"the product of the last \d+ columns of K only: the accumulator is reset at every K step",
    ),
    # 3 x 128 in every dimension a tile walks: a floor-divided N grid, a cdiv grid over a ragged K.
    ("tiled_matmul", "n_tile_256_floor_grid"): (
        {"test_values_float32", "test_blocks_are_tpu_tiles"},
        r"NaN in all of columns 256 to 383 \(33% of it; .*a tile of 256 does not divide N = 384",
    ),
    # Tiles of 256 everywhere: the NaN is an L (rows 512 on, columns 256 on), not its bounding box, and every
    # dimension the tile does not divide is named.
    ("tiled_matmul", "fixed_256_tiles"): (
        {"test_values_float32", "test_values_bfloat16_accumulate_in_float32", "test_blocks_are_tpu_tiles"},
        r"NaN in all of rows 512 to 639 and all of columns 256 to 383 \(47% of it; .*a tile of 256 divides none of "
        r"M = 640, N = 384 and K = 384",
    ),
    # A scratch made in the inputs' dtype: Pallas refuses the float32 store while tracing, for bfloat16 only (and
    # so does lowering the kernel for a TPU at bfloat16).
    ("tiled_matmul", "scratch_in_input_dtype"): (
        {"test_values_bfloat16_accumulate_in_float32", "test_kernel_does_the_work",
         "test_reduction_runs_over_last_grid_axis", "test_blocks_are_tpu_tiles", "test_working_set_fits_vmem",
         "test_mxu_gets_input_dtype_and_returns_float32", "test_accumulator_is_float32_vmem",
         "test_output_written_once", "test_lowers_for_tpu"},
        r"for bfloat16 inputs, line 19: acc_ref\[\.\.\.\] \+= product stores a float32 value into a bfloat16 ref.*"
        r"the ref was made in the inputs' dtype",
    ),
    # One K step of 256 at K = 384: the values name the K blocks summed; the grid's order is not blamed.
    ("tiled_matmul", "k_tile_256_floor_grid"): (
        {"test_values_float32", "test_blocks_are_tpu_tiles"},
        r"your grid reaches K 0 to 255 \(the products of K 256 to 383 are never added\) of 384 only",
    ),
    ("tiled_matmul", "k_tile_256_cdiv_grid"): (
        {"test_values_float32", "test_blocks_are_tpu_tiles"},
        # The judge reads the grid from the kernel's trace: the K blocks walk past the end of x.
        r"NaN in every element: your grid walks x's K dimension in 2 blocks of 256, 512 in all, past K = 384",
    ),
    # M != N in the values: a grid whose M and N axes are swapped is named as that, not as a tile.
    ("tiled_matmul", "grid_m_n_swapped"): (
        # The judge reads the grid from the kernel's trace: its M and N axes are the index maps' other way round.
        {"test_values_float32"}, r"your grid is \(3, 5, 3\): grid axis 0 has 3 steps, as many as N has blocks, .*"
                                 r"the grid's M and N axes are swapped",
    ),
    ("tiled_matmul", "writes_output_every_k_step"): (
        {"test_output_written_once"}, r"writes the output block at K step\(s\) 0, 1 of 3, before the last",
    ),
    ("flash_attention", "normalize_every_step"): (
        {"test_normalized_once_at_the_end"}, r"divides a \[128, 64\] array at KV step 0 of 16",
    ),
    ("flash_attention", "bf16_scratch"): (
        {"test_softmax_state_is_float32_vmem"}, r"keeps softmax state in a bfloat16 ref",
    ),
    ("flash_attention", "no_max_subtraction"): (
        {"test_values_large_logits", "test_values_very_negative_logits"},
        # Logits of 150 and more: no max, and a max of other scores than those exponentiated, both NaN every row.
        r"100% of the output is NaN or inf\. Several mistakes .*Either exp\(s\) is taken without the running max "
        r"subtracted",
    ),
    ("flash_attention", "no_acc_rescale"): (
        {"test_values_float32", "test_values_large_logits", "test_values_max_in_a_later_block", "test_values_bfloat16",
         "test_values_3x128", "test_values_very_negative_logits"},
        r"rescales l but not acc",
    ),
    # 3 x 128 shapes, a running max that starts at 0, a scale written in, which matmul is upcast, two passes.
    ("flash_attention", "query_tile_256"): (
        {"test_values_3x128"},
        r"your grid reaches query rows 0 to 255 of 384 only: a tile of 256 does not divide S = 384",
    ),
    ("flash_attention", "kv_tile_256_cdiv_grid"): (
        # The judge reads the grid from the kernel's trace: the key blocks walk past T.
        {"test_values_3x128"}, r"your grid walks the keys in 2 blocks of 256, 512 in all, past T = 384",
    ),
    ("flash_attention", "max_starts_at_zero"): (
        {"test_values_very_negative_logits"},
        r"Or a running max that starts at 0 stays 0 in a row whose logits all lie below -87",
    ),
    ("flash_attention", "hard_coded_scale"): (
        {"test_values_bfloat16"}, r"computed with 1/sqrt\(64\) where the scale is 1/sqrt\(D\) = 1/sqrt\(128\)",
    ),
    ("flash_attention", "qk_upcast"): (
        {"test_matmuls_take_input_dtype_and_return_float32"},
        r"multiplies float32 by float32 for q k\^T: the bfloat16 q and k blocks were converted first",
    ),
    ("flash_attention", "two_pass_over_keys"): (
        {"test_kv_streamed_over_last_grid_axis"},
        r"the KV axis has 256 steps of 128 keys, 32768 key rows fetched per query block for T = 16384",
    ),
    # State never set, and a running max of the unscaled scores: each named for what it is, not as rows unwritten.
    ("flash_attention", "acc_never_zeroed"): (
        {"test_values_float32", "test_values_large_logits", "test_values_max_in_a_later_block", "test_values_3x128",
         "test_values_very_negative_logits", "test_values_bfloat16"},
        r"reads `acc_ref` at grid step \(0, 0\) before anything was written to it",
    ),
    ("flash_attention", "max_of_unscaled_scores"): (
        {"test_values_large_logits", "test_values_max_in_a_later_block", "test_values_very_negative_logits"},
        r"Those are exactly the rows this mistake leaves NaN: the running max is taken over other scores than those "
        r"exponentiated",
    ),
    ("double_buffer", "wait_after_start"): (
        {"test_next_block_in_flight_during_compute"},
        r"block 0 is used at line \d+: .* while no copy of block 1 is in flight \(its copy starts later",
    ),
    ("double_buffer", "last_block_never_started"): (
        {"test_values_when_copies_land_at_wait", "test_values_when_copies_land_at_start",
         "test_every_copy_waited_on_its_own_semaphore", "test_slot_untouched_while_in_flight",
         "test_next_block_in_flight_during_compute", "test_streams_through_two_slots"},
        r"waits for the copy of block 1 of x, which was never started",
    ),
    ("double_buffer", "swapped_semaphore"): (
        {"test_values_when_copies_land_at_wait", "test_values_when_copies_land_at_start",
         "test_every_copy_waited_on_its_own_semaphore", "test_slot_untouched_while_in_flight"},
        r"waits on sems\[0\], which no copy in flight signals \(the copy it describes, of block 0",
    ),
    ("double_buffer", "wait_whole_x"): (
        {"test_values_when_copies_land_at_wait", "test_values_when_copies_land_at_start",
         "test_every_copy_waited_on_its_own_semaphore", "test_slot_untouched_while_in_flight"},
        r"waits for 8192 bytes on sems\[0\], but only 4096 are landed or in flight"
        r"|waits on a DMA semaphore for 20480 bytes, but it holds 4096",
    ),
    ("double_buffer", "one_slot"): (
        {"test_values_when_copies_land_at_start", "test_slot_untouched_while_in_flight"},
        r"it holds 2 \* block 1: the slot was refilled before block 0 was computed",
    ),
    # Part 5: mistakes only the compiler or the jaxpr can see, each named for what it is.
    ("scan_layers", "scan_batch"): (
        {"test_one_loop_over_layers", "test_jaxpr_size_constant", "test_compiled_size_constant"},
        r"runs 16 times, over the 16 rows of x",
    ),
    ("scan_layers", "jit_built_each_call"): (
        {"test_compiles_once"},
        r"3 more calls of forward built 3 new jax\.jit wrapper\(s\): the jit is made inside the call",
    ),
    ("grad_accumulation", "jit_built_each_call"): (
        {"test_compiles_once"}, r"3 more calls of accumulated_grads built 3 new jax\.jit wrapper\(s\)",
    ),
    ("scan_layers", "unroll_full"): ({"test_compiled_size_constant"}, r"is fully unrolled \(`unroll=True`"),
    ("remat_policy", "misspelt_name"): ({"test_no_matmul_recomputed"}, r"recomputes 1 matmul\(s\).*names 'hiden'"),
    ("remat_policy", "name_on_gelu"): (
        {"test_no_matmul_recomputed"}, r"but 'act' is on the result of `mul` \(gelu's output",
    ),
    ("remat_policy", "whole_loss"): (
        {"test_memory_budget_loss_and_grads", "test_memory_budget_min_memory"},
        r"61\.3 MiB.*wraps the whole scan: a policy does not reach inside a scan",
    ),
    ("remat_policy", "grads_elsewhere"): (
        {"test_memory_budget_loss_and_grads", "test_memory_budget_min_memory", "test_no_matmul_recomputed"},
        r"No checkpoint reaches the scan that computes the gradient",
    ),
    # A loss computed apart from its gradient is a second forward pass, not a recomputation in the backward one.
    ("remat_policy", "loss_forward_twice"): (
        {"test_no_matmul_recomputed"},
        r"it runs the layers forward 2 times, in 2 scans \(called at line 20: .*; line 21: .*\), while the "
        r"backward pass recomputes no matmul",
    ),
    # "jitted (once at module scope)", seen in what later calls compile and run.
    ("remat_policy", "not_jitted"): (
        {"test_jitted_once"}, r"after a first call of `loss_and_grads`, 2 more call\(s\) with the same arguments "
                              r"compiled \d+ program\(s\) \(jit\(scan\)\)",
    ),
    ("mixed_precision", "train_step_not_jitted"): (
        {"test_train_step_jitted"}, r"one call of `train_step` ran \d+ compiled programs \(jit\(convert_element_type\)",
    ),
    ("grad_accumulation", "micro_size_swapped"): (
        {"test_loop_over_microbatches", "test_memory_scales_with_microbatch"},
        r"runs 512 times for a batch of 2048 rows; it should run num_micro=4 times",
    ),
    # A loop one microbatch short is named by its bounds (and the values by the microbatches they leave out), not
    # by a reshape that was right.
    ("grad_accumulation", "one_micro_short"): (
        {"test_values", "test_loop_over_microbatches"},
        r"runs 3 times for a batch of 2048 rows; .*Its bounds stop 1 trip\(s\) short",
    ),
    ("grad_accumulation", "num_micro_traced"): (
        {"test_values", "test_loop_over_microbatches", "test_accumulator_float32", "test_memory_scales_with_microbatch",
         "test_compiles_once"},
        r"num_micro reached that line as a traced value.*static_argnames=\"num_micro\"",
    ),
    ("grad_accumulation", "split_stack_copy"): (
        {"test_memory_scales_with_microbatch"}, r"makes float32\[16, 512, 64\], a copy of the whole batch",
    ),
    ("grad_accumulation", "peeled_first_micro"): (
        {"test_memory_scales_with_microbatch", "test_loop_over_microbatches"},
        r"makes float32\[15, 512, 64\], a copy of 94% of the batch \(every microbatch but one",
    ),
    ("grad_accumulation", "no_divide"): ({"test_values"}, r"It is num_micro=4 times the mean"),
    ("mixed_precision", "highest_precision"): (
        {"test_dense_values", "test_dense_dtypes", "test_loss_values", "test_loss_matmuls_in_bf16"},
        r"into bfloat16 \(precision=HIGHEST does not change it\)",
    ),
    ("mixed_precision", "emulated_f32_dot"): (
        {"test_dense_dtypes", "test_loss_matmuls_in_bf16", "test_train_step_matmuls"},
        r"line 14: return _round\(x\) @ _round\(w\) multiplies float32\[256, 64\] by float32\[64, 128\]",
    ),
    ("mixed_precision", "grads_from_f32_loss"): (
        {"test_train_step_matmuls"}, r"5 float32 x float32 matmul\(s\) of 7: line 20",
    ),
    ("mixed_precision", "loss_scale_not_undone"): (
        {"test_small_updates_kept"}, r"as float32 SGD with its gradients multiplied by 1024 would",
    ),
    # A loss summed over the outputs is named as that, in the loss and in the updates it scales, not as rounding
    # or as a loss scale never undone.
    ("mixed_precision", "loss_summed_outputs"): (
        {"test_loss_values", "test_small_updates_kept", "test_train_step_loss"},
        r"that is 8 times the mean: the squared errors are summed over the 8 outputs of each row instead of averaged",
    ),
    # An update that adds the gradient is named by its sign; a step that ignores its lr, by its lr.
    ("mixed_precision", "gradient_ascent"): (
        {"test_small_updates_kept"}, r"multiplied by -1 would\. The update adds the gradient \(`p \+ lr \* g`\)",
    ),
    ("mixed_precision", "hard_coded_lr"): (
        {"test_step_follows_lr"}, r"The step is the same whatever the lr: it ignores its `lr` argument",
    ),
    # A hidden layer rounded to bfloat16 can hide in a mean over 256 rows, never in single rows.
    ("mixed_precision", "bias_in_bfloat16"): (
        {"test_loss_values"}, r"round only the operands of the two matmuls to bfloat16",
    ),
    ("mixed_precision", "bf16_master"): (
        {"test_master_weights_float32", "test_small_updates_kept", "test_train_step_loss"},
        r"moved in whole bfloat16 steps",
    ),
    # b starts at 0, so a loss that subtracts it gives the same losses and w, and b with the other sign.
    ("no_host_sync", "bias_subtracted"): (
        {"test_train_values"}, r"params\['b'\] after 6 steps differs from the expected value in 1 of 1 element",
    ),
    ("no_host_sync", "float_append"): (
        {"test_no_wait_inside_train"}, r"waiting at line 26: losses\.append\(float\(loss\)\) \(`reads its value`\)",
    ),
    ("no_host_sync", "early_stop"): ({"test_no_wait_inside_train"}, r"waiting at line 27: if jnp\.isnan\(loss\)"),
    ("no_host_sync", "poll_ready"): ({"test_no_wait_inside_train"}, r"line 26: while not loss\.is_ready\(\): \(poll"),
    ("no_host_sync", "time_no_block"): (
        {"test_time_step_waits_for_result"}, r"clock reading 2 of 2 was taken while 3 call\(s\) of step_fn",
    ),
    # time_step is timed on a clock that moves a fixed time per call, with a step that returns a pytree.
    ("no_host_sync", "time_returns_total"): (
        {"test_time_step_uses_clock"}, r"should return 0\.25; it returned 0\.75, the total of the 3 calls",
    ),
    ("no_host_sync", "default_n_iter_10"): (
        {"test_time_step_uses_clock"}, r"time_step called without n_iter timed 10 call\(s\) of step_fn; its default is "
                                       r"n_iter=5",
    ),
    ("no_host_sync", "block_method_on_result"): (
        {"test_time_step_uses_clock", "test_time_step_excludes_compile", "test_time_step_warmup_waited",
         "test_time_step_waits_for_result"},
        r"'tuple' object has no attribute 'block_until_ready'",
    ),
    # Part 6: what the devices exchange, read from the compiled HLO and the learner's jaxpr.
    ("fsdp_step", "columns"): ({"test_shard_params"}, r"is sharded P\(None, 'fsdp'\), expected P\('fsdp'\)"),
    ("fsdp_step", "sum_of_local_means"): (
        {"test_loss_values", "test_grads_values"}, r"8 times the right loss: each device took the mean of its own rows",
    ),
    ("fsdp_step", "psum_then_slice"): (
        {"test_grads_reduce_scattered"}, r"makes a psum of the whole b1 gradient at line \d+: mine = ",
    ),
    ("fsdp_step", "divides_by_rows"): (
        {"test_loss_values", "test_grads_values"},
        r"That is 16 times the right loss, the sum of squared errors divided by B = 48 instead of by the number of "
        r"elements B \* O = 768",
    ),
    ("fsdp_step", "bias_gathered_by_padded_psum"): (
        {"test_grads_values", "test_grads_reduce_scattered"},
        r"makes a psum of the whole b1 at .*, of a shard padded with zeros \(`dynamic_update_slice`\)",
    ),
    ("fsdp_step", "gathers_batch"): ({"test_batch_stays_sharded"}, r"all-gathers f32\[48,24\], the whole batch x"),
    ("fsdp_step", "psum_of_squared_errors"): (
        {"test_grads_reduce_scattered"}, r"all-reduces f32\[6,16\], 96 floats per device that are neither a parameter",
    ),
    ("fsdp_step", "local_means_unsummed"): (
        {"test_loss_values"}, r"is not one number: the 8 devices hold .*\(each the mean of that device's own rows\)",
    ),
    ("fsdp_step", "bias_left_sharded"): (
        {"test_traceable", "test_loss_values", "test_grads_values", "test_loss_replicated", "test_grads_sharded",
         "test_batch_stays_sharded", "test_grads_reduce_scattered"},
        r"combines arrays whose shardings do not fit together at \w+\.py line 18",
    ),
    # JAX's advice names `jax.set_mesh`; the file never calls it: the bare spec is what is named, in every check.
    ("fsdp_step", "reshard_outside_mesh"): (
        {"test_traceable", "test_loss_values", "test_grads_values", "test_loss_replicated", "test_grads_sharded",
         "test_batch_stays_sharded", "test_grads_reduce_scattered"},
        r"^`loss_and_grads` gives the bare spec `P\(\)` while no mesh is set at \w+\.py line 19",
    ),
    # The bias after the relu is a model of its own, named as such, not a gather in the wrong order.
    ("fsdp_step", "bias_outside_relu"): (
        {"test_loss_values", "test_grads_values"},
        r"That is the loss of a model whose hidden layer is relu\(x @ w1\) \+ b1, the bias added after the relu",
    ),
    ("fsdp_step", "no_relu"): (
        {"test_loss_values", "test_grads_values"},
        r"That is the loss of a model whose hidden layer is x @ w1 \+ b1, with no relu",
    ),
    ("tensor_parallel_mlp", "b2_in_psum"): ({"test_values"}, r"plus 7 more copies of b2"),
    ("tensor_parallel_mlp", "no_out_sharding"): (
        {"test_traceable", "test_values", "test_output_replicated", "test_one_all_reduce", "test_no_other_collectives",
         "test_float32_sum"},
        r"multiplies over a dimension that is split across devices at \w+\.py line 7",
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
    # bfloat16 operands are named as operands (by test_float32_sum: the judge's test_values sees no jaxpr), a psum
    # of each device's own hidden units as that.
    ("tensor_parallel_mlp", "bf16_operands_f32_accumulate"): (
        {"test_values", "test_float32_sum"}, r"multiplies bfloat16 operands, rounded from float32 before the product",
    ),
    ("tensor_parallel_mlp", "psum_both_matmuls"): (
        {"test_values", "test_one_all_reduce"},
        r"adds up each device's own 8 hidden units, which are whole already \(w1 is split by columns\)",
    ),
    # collective_matmul: the gathers by other means are named by the collective they compile to.
    ("collective_matmul", "all_gather_matmul"): (
        {"test_only_collective_permutes", "test_ring_permutes", "test_chunk_matmuls"},
        r"runs an all-gather of f32\[32,16\]\. An all-gather hands every device all of x",
    ),
    ("collective_matmul", "zeros_and_psum"): (
        {"test_only_collective_permutes", "test_ring_permutes", "test_chunk_matmuls"},
        r"runs an all-reduce of f32\[32,16\]",
    ),
    ("collective_matmul", "eight_permutes"): (
        {"test_ring_permutes"}, r"receives 8 chunks of x in all.*The 8th transfer",
    ),
    ("collective_matmul", "whole_buffer"): (
        {"test_ring_permutes"}, r"moves 512 numbers \(\(32, 16\)\) per device per step",
    ),
    ("collective_matmul", "owner_off_by_direction"): (
        {"test_values"}, r"device 0: row block 1 holds device 7's product.*written at another device's rows",
    ),
    ("collective_matmul", "permutes_then_one_matmul"): (
        {"test_chunk_matmuls"}, r"float32\[32, 16\] @ float32\[16, 3\] -> float32\[32, 3\] \(line 23: .*8 chunks' work",
    ),
    ("collective_matmul", "no_wraparound"): (
        {"test_values", "test_ring_permutes"}, r"the ppermute at line 20 has no pair 7→0",
    ),
    # The judge's test_values sees values only, so it cannot tell a ring missing a pair from products unwritten.
    ("collective_matmul", "odd_steps_unwritten"): (
        {"test_values", "test_ring_permutes", "test_chunk_matmuls"},
        r"each device writes 8 products, one for every chunk it holds in turn .*is a step's product skipped",
    ),
    ("collective_matmul", "rotates_w"): (
        {"test_values", "test_output_sharding", "test_ring_permutes"},
        r"sharded P\('devs', None\), expected P\(None, 'devs'\).*passing w's columns round the ring",
    ),
    ("collective_matmul", "while_loop"): (
        {"test_ring_permutes", "test_chunk_matmuls"}, r"the ppermute at line 23 sits inside a `while`",
    ),
    # pipeline_stages: each wrong schedule named by what its values or its permutes show.
    # The judge's test_values sees values only: a loop one step short and a last write skipped leave the same zeros.
    ("pipeline_stages", "one_step_short"): (
        {"test_values"}, r"The last output is all zeros: either the loop stopped 1 step before microbatch 5 left the",
    ),
    ("pipeline_stages", "last_output_not_kept"): (
        {"test_values"}, r"or the activation reached the last stage but never went into the buffer the outputs are",
    ),
    ("pipeline_stages", "feeds_next_early"): ({"test_values"}, r"Output m holds microbatch m \+ 1's result"),
    ("pipeline_stages", "no_last_stage_mask"): (
        {"test_values"}, r"every stage wrote its own activation into the buffer the psum collects",
    ),
    ("pipeline_stages", "unsummed_outputs"): (
        {"test_values"}, r"The devices hold different outputs while the result claims to be replicated",
    ),
    ("pipeline_stages", "wrong_direction"): (
        {"test_values", "test_permute_direction"}, r"uses the pairs 1→0, 2→1, 3→2: it sends activations left",
    ),
    ("pipeline_stages", "gathers_weights_sequential"): (
        {"test_weights_stay", "test_permute_steps", "test_permute_direction", "test_matmul_work"},
        r"runs an all-gather of f32\[4,16,16\] \(all S layers' weights\)",
    ),
    ("pipeline_stages", "replicated_weights_indexed"): (
        {"test_weights_stay"}, r"runs an all-gather of f32\[4,16,16\] \(all S layers' weights\)",
    ),
    ("pipeline_stages", "one_microbatch_at_a_time"): (
        {"test_permute_steps", "test_matmul_work"}, r"makes 18 ppermute steps .* That is one microbatch at a time",
    ),
    ("pipeline_stages", "extra_drain_steps"): (
        {"test_permute_steps", "test_matmul_work"}, r"makes 12 ppermute steps .* The extra steps drain an empty pipe",
    ),
    ("pipeline_stages", "collects_last_stage_input"): (
        {"test_values"}, r"Each output went through layers 0\.\.2 only: layer 3 never acted on it",
    ),
    ("pipeline_stages", "slices_last_stage_outside"): (
        {"test_traceable", "test_values", "test_output_replicated", "test_weights_stay", "test_permute_steps",
         "test_permute_direction", "test_matmul_work"},
        r"slices an array along a dimension that is split across devices at \w+\.py line 29: "
        r"`return every\[stages - 1\]`",
    ),
    ("pipeline_stages", "while_loop"): (
        {"test_permute_steps", "test_matmul_work"}, r"sits inside a `while`, so its steps cannot be counted",
    ),
    # Multi-process: what each of the 2 processes read, built and reduced, and where a waiting one was.
    ("multi_process", "reads_everything"): (
        {"test_reads_own_rows"}, r"process 0: `load_shard` read rows 0-63 \(read_rows\(0, 64\)\); process 0 owns "
                                 r"rows 0-31, and read the others' too",
    ),
    ("multi_process", "process0_broadcasts"): (
        {"test_reads_own_rows"}, r"`load_shard` read rows 0-63 \(read_rows\(0, 1\), read_rows\(1, 64\)\)",
    ),
    ("multi_process", "strided_rows"): (
        {"test_reads_own_rows"}, r"read rows 0, 2, 4, 6 and 28 more ranges .* rows 1, 3, 5, 7 and 12 more ranges "
                                 r"were never read\. Read the contiguous block",
    ),
    ("multi_process", "floor_divided_rows"): (
        {"test_reads_own_rows"}, r"with 67 rows over 2 processes \(a count that does not divide 67\), process 1 read "
                                 r"rows 33-65, and rows 66 are read by no process",
    ),
    ("multi_process", "true_division_bounds"): (
        {"test_reads_own_rows", "test_end_to_end"}, r"read_rows takes integer row numbers.*use integer division",
    ),
    ("multi_process", "asarray_local"): (
        {"test_global_batch", "test_end_to_end"}, r"is a \(32, 8\) array on 1 device: the rows of this process only",
    ),
    ("multi_process", "local_mesh"): (
        {"test_global_batch", "test_end_to_end"}, r"is a \(32, 8\) array on 2 devices: the rows of this process only",
    ),
    ("multi_process", "device_put_local"): (
        {"test_global_batch", "test_end_to_end"}, r"`global_batch` called `jax.device_put` with this process's rows",
    ),
    ("multi_process", "numpy_mean"): (
        {"test_global_mean", "test_end_to_end"}, r"`global_mean` asked for the whole global array on the host",
    ),
    ("multi_process", "own_shard_mean"): (
        {"test_global_mean", "test_end_to_end"}, r"on device 0 holds .*, not the mean of all 64 rows",
    ),
    ("multi_process", "mean_on_process0"): (
        {"test_global_mean", "test_end_to_end"},
        r"process 0: the 2 processes stopped making progress for 10 s in different places: process 0 in "
        r"\"global_mean\", process 1 finished",
    ),
}


@pytest.fixture(scope="module")
def warm(shared_xla_cache: Path) -> Iterator[tuple[Launcher | None, Path]]:
    """One warm worker and the run's compilation cache for every exercise this test worker validates, as one
    `course validate` of the whole course has: each exercise would otherwise start a worker of its own."""
    cache = shared_xla_cache
    worker = start_worker(cache)
    try:
        yield worker, cache
    finally:
        if worker is not None:
            worker.close()


@pytest.fixture(scope="class")
def validation(request: pytest.FixtureRequest, warm: tuple[Launcher | None, Path]) -> ValidationReport:
    """`course validate` of the class's exercise, run once for both its tests: its verdicts, and the gradings
    behind them."""
    return validate(COURSE, [request.cls.exercise], jobs=JOBS, warm=warm, variants=_variants(request.cls.exercise))


def _variants(exercise: str) -> set[str] | None:
    """The wrong variants this run grades: every one with COURSE_VALIDATE=all, else those CASES lists."""
    if os.environ.get("COURSE_VALIDATE") == "all":
        return None
    return {variant for name, variant in CASES if name == exercise}


class ExerciseValidates:
    """`course validate EXERCISE`: its stub fails, its solution passes, each wrong variant fails the check it
    names, and each listed variant fails only the checks about its mistake, saying what it is."""

    exercise: str

    @pytest.mark.slow
    def test_validates(self, validation: ValidationReport, capsys: pytest.CaptureFixture[str]) -> None:
        """The stub fails, the solution passes, every wrong variant graded fails the check it names."""
        views.validation(validation)
        shown = capsys.readouterr()
        problems = {e.name: e.problems for e in validation.exercises if e.problems}
        assert [e.name for e in validation.exercises] == [self.exercise]
        assert validation.sound and validation.exit_code == 0, (problems, validation.problems, shown.out + shown.err)
        assert "hold." in shown.out + shown.err, shown
        assert all(e.gradings for e in validation.exercises), "the exercise was not graded"

    @pytest.mark.slow
    def test_each_mistake_is_named_once(self, validation: ValidationReport) -> None:
        """Each listed wrong variant fails only the checks about its mistake, saying what it is."""
        graded = {(e.name, job.path.stem): result for e in validation.exercises for job, result in e.gradings
                  if job.role == "wrong"}
        for key, (allowed, pattern) in CASES.items():
            if key[0] != self.exercise:
                continue
            assert key in graded, f"{key} is not a wrong variant of the course"
            failing = {c.id: c.message for c in graded[key].checks if c.status != "passed" and not c.hidden}
            assert failing and set(failing) <= allowed, (key, failing)
            assert any(re.search(pattern, m) for m in failing.values()), (key, failing)


# One class per exercise of course.toml, named after it, so a new exercise is validated without a line here.
for _exercise in COURSE.exercises:
    _name = f"Test_{_exercise.name}"
    globals()[_name] = type(_name, (ExerciseValidates,), {"exercise": _exercise.name, "__doc__": (
        f"`course validate {_exercise.name}` holds, and names each of its listed mistakes once.")})


def test_course_folders_hold() -> None:
    """The course-wide part of `course validate`: every folder under exercises/, graders/ and solutions/
    is an exercise course.toml lists, at its position."""
    assert checks.folder_problems(COURSE) == []


def test_every_case_is_a_wrong_variant() -> None:
    """Each listed mistake is a wrong variant of an exercise of the course, so no case goes unchecked."""
    variants = {(e.name, p.stem) for e in COURSE.exercises for p in checks.wrong_variants(e)}
    assert set(CASES) <= variants, sorted(set(CASES) - variants)


def test_every_grader_imports_jax_as_it_is_collected() -> None:
    """Each grader (hidden ones too) imports JAX at its top: the grading sets JAX up for counting compiles and the
    strict interpreter as JAX is imported (`course.engine.child.plugin`), before the guard's snapshot and the
    learner's file; a grader that imported it only inside a check would find neither in place."""
    import ast

    def imports_jax(path: Path) -> bool:
        body = ast.parse(path.read_text(encoding="utf-8")).body
        return any(isinstance(node, ast.Import) and any(a.name.split(".")[0] == "jax" for a in node.names)
                   or isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "jax"
                   for node in body)

    graders = [p for e in COURSE.exercises for p in (e.grader_path, e.hidden_grader_path) if p.is_file()]
    assert len(graders) >= len(COURSE.exercises)
    assert [p for p in graders if not imports_jax(p)] == []
