"""`course.grading`: the helpers graders use, each imported from its own submodule on first use.

Instructors read `docs/authoring.md` for an example of each helper. A grader writes
`from course.grading import assert_array`: `HELPERS` names the submodule that defines each helper,
and asking for a name imports that submodule and no other, so importing the package itself imports
none of them, nor JAX. The `TYPE_CHECKING` imports say the same to editors and type checkers.
`tests/grading/test_package.py` holds `HELPERS`, `__all__` and those imports to the submodules'
own `__all__`; `python tests/grading/package_table.py` prints all three as they should be.

The modules are laid out along the seam of a split grading (docs/security.md, "The judge"):

- `feedback`: how a check fails (`check`, `fail`), in both processes;
- `judge`: what the judge concludes with: values compared, program texts read, the learner's lines
  and errors told; nothing there runs, traces or instruments the learner's code;
- `observe`: what the executor watches the learner's code do, by topic: `calls` (compiles,
  executions, builds, waits, donations), `traces` (jaxprs, collectives, shardings) and `kernels`;
- `inspect`: the sections of `course inspect`, built with the helpers above.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

# Packed by submodule, as in HELPERS (ruff's import sorting would give each name a line of its own).
# isort: off
if TYPE_CHECKING:
    from course.grading.feedback import CheckFailed, check, fail
    from course.grading.judge.arrays import (
        BlockMismatch, assert_array, assert_dtype, assert_is_array, assert_shape, block_mismatches, describe_value,
    )
    from course.grading.judge.donors import ProgramBuffers, parameter_shapes, program_buffers
    from course.grading.judge.fingerprint import (
        STRUCTURAL, Seen, fingerprint, kernels, maps_shards, operations, signature, structure,
    )
    from course.grading.judge.named import (
        ViewCase, axis_entries, numpy_index, numpy_view, selector_code, selector_entries, selectors, view_cases,
    )
    from course.grading.judge.properties import assert_gave, check_property
    from course.grading.judge.quoting import quote_line
    from course.grading.judge.rounding import RoundingReport, correctly_rounded, exact_matmul, rounding_report
    from course.grading.judge.source import (
        callback_error, code_names, defined_names, describe_exception, learner_frames, learner_location,
        learner_traceback, raised_in, store_dtypes, syntax_message,
    )
    from course.grading.observe.calls.compiles import (
        BACKEND_COMPILE_EVENT, CompileEvent, CompileRecorder, install_listener, matches_name, own_function_names,
        record_compiles, via_interpreter,
    )
    from course.grading.observe.calls.donation import (
        Copy, DonationInfo, JitCall, Source, WarningsCall, alias_bytes, argument_copies, assert_consumed,
        assert_not_consumed, call_recording_warnings, donation_info, is_consumed, is_deleted_error, jit_calls,
        jitted_functions, ran_jit_calls, runs_as_jit_calls,
    )
    from course.grading.observe.calls.executions import ProgramRun, RunRecorder, record_runs
    from course.grading.observe.calls.reruns import Rerun, called_programs, program_values, rerun
    from course.grading.observe.calls.ownership import call_is_jax_helper, eqn_is_jax_helper, is_jax_helper
    from course.grading.observe.calls.patching import JitBuilds, count_jit_builds, jit_builds_per_call, replaced
    from course.grading.observe.calls.processes import RowLog, own_rows, rows_text, step
    from course.grading.observe.calls.programs import (
        Memory, Program, call_jitted, compile_lowered, compile_program, compile_trace, grad_of_sum, hlo_size, mib,
        over_budget, size_text, under_jit,
    )
    from course.grading.observe.calls.rebuilt import NOT_USABLE_WARNING, operand_spec, rebuilt_call
    from course.grading.observe.calls.recompiles import LaterCalls, later_calls
    from course.grading.observe.calls.silent_waits import SilentWait, silent_wait_message, watching_waits
    from course.grading.observe.calls.steps import (
        compiles_per_call, consumed_leaves, donated_leaves, jitted_candidates, jitted_step,
    )
    from course.grading.observe.calls.strict_runs import (
        abstract_tpu, jitted_once, needs_tpu, runs_here, strict_values, tpu_fallback,
    )
    from course.grading.observe.calls.there import in_executor, registered
    from course.grading.observe.calls.tpu import (
        interpreter_failure, run_strict, strict_by_default, strict_params, tpu_interpret,
    )
    from course.grading.observe.calls.waits import ClockRead, Gate, HostWait, TimingLog, WaitRecorder
    from course.grading.observe.calls.warmup import (
        AfterWarmup, WatchedCall, after_warmup, unreported_compiles, watched_calls,
    )
    from course.grading.observe.kernels.accumulators import Accumulator, TaintPass, find_accumulators, taint_pass
    from course.grading.observe.kernels.aliasing import (
        Hazard, first_hazard, first_read_after_write, hazard_message, overlaps, reads_after_writes, run_aliased,
        unrolled_loops,
    )
    from course.grading.observe.kernels.dma_replay import DmaCopy, DmaReplay, Hang, Touch, WaitMismatch, replay_dmas
    from course.grading.observe.kernels.grid import (
        BlockUse, GridInfo, VmemItem, bad_region, grid_info, tile_problem, unwritten_tail, unwritten_tails, vmem_bytes,
    )
    from course.grading.observe.kernels.kernel_trace import KernelTrace, evaluate_jaxpr, trace_kernel
    from course.grading.observe.kernels.kernels import (
        Access, KernelCall, accesses_in, describe_lines, has_primitive, kernel_call, kernel_call_of,
        nested_primitive_counts, pallas_calls, primitive_counts,
    )
    from course.grading.observe.kernels.lowering import (
        Refusal, assert_lowers_for_tpu, lowering_words, refusal_of, tpu_refusals,
    )
    from course.grading.observe.kernels.memory import (
        HBM_SPACES, KernelMemory, dma_copies, explain_strict_failure, hbm_access_message, kernel_memory,
        memory_accesses, ref_spaces, smem_reads,
    )
    from course.grading.observe.kernels.memory_walk import SPACE_WORDS, DmaEvent, MemoryAccess, RefInfo, Walker
    from course.grading.observe.kernels.operands import Flow, KernelFlow, kernel_flow, work_outside
    from course.grading.observe.kernels.refs import (
        RefTrace, describe_accesses, explained_ref_errors, moves_selection, ref_error_hint, ref_leaves, ref_trace,
        refs_in, trace_refs,
    )
    from course.grading.observe.kernels.semaphores import Dma, StuckWait, match_waits, one_semaphore, stuck_waits
    from course.grading.observe.kernels.trace_model import Buffer, Event, TraceUnsupported, Window
    from course.grading.observe.kernels.trace_rules import RULES
    from course.grading.observe.traces.collectives import (
        HLO_COLLECTIVES, BlockFault, Collective, HloCollective, by_call, collectives_in, compiled_hlo,
        hlo_collective_shapes, hlo_collectives, jaxpr_collectives, live_jaxpr, total_steps, wrong_blocks,
    )
    from course.grading.observe.traces.dataflow import LAYOUT_OPS, OutputOrigin, output_origins
    from course.grading.observe.traces.jaxprs import (
        Dim, called_function_line, equations, is_var, jitted_body, learner_line, region_of, region_text, sendable,
        sub_env, traced, walk_eqns,
    )
    from course.grading.observe.traces.loops import (
        EqnRuns, Loop, eqn_runs, jaxpr_size, line_text, loops_in, times_run, traced_jaxpr, type_text,
    )
    from course.grading.observe.traces.matmuls import (
        Matmul, float32_matmuls, matmul_flops, matmuls_in, matmuls_of, mflop, repeated_matmuls,
    )
    from course.grading.observe.traces.residuals import Residual, describe_residuals, residuals_of, scan_residuals
    from course.grading.observe.traces.scalars import (
        Unknown, apply, const_value, is_known, literal_value, modelled, read_var, unknown_like,
    )
    from course.grading.observe.traces.sharding import (
        ShardMismatch, Traced, assert_mesh, assert_sharding, call_explained, call_traced, differing_copies,
        per_device_bytes, shard_mismatches, shard_shapes, sharding_text, spec_text, traced_once,
    )
# isort: on

# Each public helper and the submodule that defines it: a name two submodules define cannot be here
# twice, so the test refuses it where a search order would have picked one. Read-only, since learner
# code runs in the process that looks names up here.
HELPERS: Mapping[str, str] = MappingProxyType({
    "CheckFailed": "feedback", "check": "feedback", "fail": "feedback",
    "BlockMismatch": "judge.arrays", "assert_array": "judge.arrays", "assert_dtype": "judge.arrays",
    "assert_is_array": "judge.arrays", "assert_shape": "judge.arrays", "block_mismatches": "judge.arrays",
    "describe_value": "judge.arrays",
    "ProgramBuffers": "judge.donors", "parameter_shapes": "judge.donors", "program_buffers": "judge.donors",
    "STRUCTURAL": "judge.fingerprint", "Seen": "judge.fingerprint", "fingerprint": "judge.fingerprint",
    "kernels": "judge.fingerprint", "maps_shards": "judge.fingerprint", "operations": "judge.fingerprint",
    "signature": "judge.fingerprint", "structure": "judge.fingerprint",
    "ViewCase": "judge.named", "axis_entries": "judge.named", "numpy_index": "judge.named",
    "numpy_view": "judge.named", "selector_code": "judge.named", "selector_entries": "judge.named",
    "selectors": "judge.named", "view_cases": "judge.named",
    "assert_gave": "judge.properties", "check_property": "judge.properties",
    "quote_line": "judge.quoting",
    "RoundingReport": "judge.rounding", "correctly_rounded": "judge.rounding", "exact_matmul": "judge.rounding",
    "rounding_report": "judge.rounding",
    "callback_error": "judge.source", "code_names": "judge.source", "defined_names": "judge.source",
    "describe_exception": "judge.source", "learner_frames": "judge.source", "learner_location": "judge.source",
    "learner_traceback": "judge.source", "raised_in": "judge.source", "store_dtypes": "judge.source",
    "syntax_message": "judge.source",
    "BACKEND_COMPILE_EVENT": "observe.calls.compiles", "CompileEvent": "observe.calls.compiles",
    "CompileRecorder": "observe.calls.compiles", "install_listener": "observe.calls.compiles",
    "matches_name": "observe.calls.compiles", "own_function_names": "observe.calls.compiles",
    "record_compiles": "observe.calls.compiles", "via_interpreter": "observe.calls.compiles",
    "Copy": "observe.calls.donation", "DonationInfo": "observe.calls.donation", "JitCall": "observe.calls.donation",
    "Source": "observe.calls.donation", "WarningsCall": "observe.calls.donation",
    "alias_bytes": "observe.calls.donation", "argument_copies": "observe.calls.donation",
    "assert_consumed": "observe.calls.donation", "assert_not_consumed": "observe.calls.donation",
    "call_recording_warnings": "observe.calls.donation", "donation_info": "observe.calls.donation",
    "is_consumed": "observe.calls.donation", "is_deleted_error": "observe.calls.donation",
    "jit_calls": "observe.calls.donation", "jitted_functions": "observe.calls.donation",
    "ran_jit_calls": "observe.calls.donation", "runs_as_jit_calls": "observe.calls.donation",
    "Rerun": "observe.calls.reruns", "called_programs": "observe.calls.reruns",
    "program_values": "observe.calls.reruns", "rerun": "observe.calls.reruns",
    "ProgramRun": "observe.calls.executions", "RunRecorder": "observe.calls.executions",
    "record_runs": "observe.calls.executions",
    "call_is_jax_helper": "observe.calls.ownership", "eqn_is_jax_helper": "observe.calls.ownership",
    "is_jax_helper": "observe.calls.ownership",
    "JitBuilds": "observe.calls.patching", "count_jit_builds": "observe.calls.patching",
    "jit_builds_per_call": "observe.calls.patching", "replaced": "observe.calls.patching",
    "RowLog": "observe.calls.processes", "own_rows": "observe.calls.processes", "rows_text": "observe.calls.processes",
    "step": "observe.calls.processes",
    "Memory": "observe.calls.programs", "Program": "observe.calls.programs", "call_jitted": "observe.calls.programs",
    "compile_lowered": "observe.calls.programs", "compile_program": "observe.calls.programs",
    "compile_trace": "observe.calls.programs", "grad_of_sum": "observe.calls.programs",
    "hlo_size": "observe.calls.programs", "mib": "observe.calls.programs", "over_budget": "observe.calls.programs",
    "size_text": "observe.calls.programs", "under_jit": "observe.calls.programs",
    "NOT_USABLE_WARNING": "observe.calls.rebuilt", "operand_spec": "observe.calls.rebuilt",
    "rebuilt_call": "observe.calls.rebuilt",
    "LaterCalls": "observe.calls.recompiles", "later_calls": "observe.calls.recompiles",
    "SilentWait": "observe.calls.silent_waits", "silent_wait_message": "observe.calls.silent_waits",
    "watching_waits": "observe.calls.silent_waits",
    "compiles_per_call": "observe.calls.steps", "consumed_leaves": "observe.calls.steps",
    "donated_leaves": "observe.calls.steps", "jitted_candidates": "observe.calls.steps",
    "jitted_step": "observe.calls.steps",
    "abstract_tpu": "observe.calls.strict_runs", "jitted_once": "observe.calls.strict_runs",
    "needs_tpu": "observe.calls.strict_runs", "runs_here": "observe.calls.strict_runs",
    "strict_values": "observe.calls.strict_runs", "tpu_fallback": "observe.calls.strict_runs",
    "in_executor": "observe.calls.there", "registered": "observe.calls.there",
    "interpreter_failure": "observe.calls.tpu", "run_strict": "observe.calls.tpu",
    "strict_by_default": "observe.calls.tpu", "strict_params": "observe.calls.tpu",
    "tpu_interpret": "observe.calls.tpu",
    "ClockRead": "observe.calls.waits", "Gate": "observe.calls.waits", "HostWait": "observe.calls.waits",
    "TimingLog": "observe.calls.waits", "WaitRecorder": "observe.calls.waits",
    "AfterWarmup": "observe.calls.warmup", "WatchedCall": "observe.calls.warmup",
    "after_warmup": "observe.calls.warmup", "unreported_compiles": "observe.calls.warmup",
    "watched_calls": "observe.calls.warmup",
    "Accumulator": "observe.kernels.accumulators", "TaintPass": "observe.kernels.accumulators",
    "find_accumulators": "observe.kernels.accumulators", "taint_pass": "observe.kernels.accumulators",
    "Hazard": "observe.kernels.aliasing", "first_hazard": "observe.kernels.aliasing",
    "first_read_after_write": "observe.kernels.aliasing", "hazard_message": "observe.kernels.aliasing",
    "overlaps": "observe.kernels.aliasing", "reads_after_writes": "observe.kernels.aliasing",
    "run_aliased": "observe.kernels.aliasing", "unrolled_loops": "observe.kernels.aliasing",
    "DmaCopy": "observe.kernels.dma_replay", "DmaReplay": "observe.kernels.dma_replay",
    "Hang": "observe.kernels.dma_replay", "Touch": "observe.kernels.dma_replay",
    "WaitMismatch": "observe.kernels.dma_replay", "replay_dmas": "observe.kernels.dma_replay",
    "BlockUse": "observe.kernels.grid", "GridInfo": "observe.kernels.grid", "VmemItem": "observe.kernels.grid",
    "bad_region": "observe.kernels.grid", "grid_info": "observe.kernels.grid", "tile_problem": "observe.kernels.grid",
    "unwritten_tail": "observe.kernels.grid", "unwritten_tails": "observe.kernels.grid",
    "vmem_bytes": "observe.kernels.grid",
    "KernelTrace": "observe.kernels.kernel_trace", "evaluate_jaxpr": "observe.kernels.kernel_trace",
    "trace_kernel": "observe.kernels.kernel_trace",
    "Access": "observe.kernels.kernels", "KernelCall": "observe.kernels.kernels",
    "accesses_in": "observe.kernels.kernels", "describe_lines": "observe.kernels.kernels",
    "has_primitive": "observe.kernels.kernels", "kernel_call": "observe.kernels.kernels",
    "kernel_call_of": "observe.kernels.kernels", "nested_primitive_counts": "observe.kernels.kernels",
    "pallas_calls": "observe.kernels.kernels", "primitive_counts": "observe.kernels.kernels",
    "Refusal": "observe.kernels.lowering", "assert_lowers_for_tpu": "observe.kernels.lowering",
    "lowering_words": "observe.kernels.lowering", "refusal_of": "observe.kernels.lowering",
    "tpu_refusals": "observe.kernels.lowering",
    "HBM_SPACES": "observe.kernels.memory", "KernelMemory": "observe.kernels.memory",
    "dma_copies": "observe.kernels.memory", "explain_strict_failure": "observe.kernels.memory",
    "hbm_access_message": "observe.kernels.memory", "kernel_memory": "observe.kernels.memory",
    "memory_accesses": "observe.kernels.memory", "ref_spaces": "observe.kernels.memory",
    "smem_reads": "observe.kernels.memory",
    "SPACE_WORDS": "observe.kernels.memory_walk", "DmaEvent": "observe.kernels.memory_walk",
    "MemoryAccess": "observe.kernels.memory_walk", "RefInfo": "observe.kernels.memory_walk",
    "Walker": "observe.kernels.memory_walk",
    "Flow": "observe.kernels.operands", "KernelFlow": "observe.kernels.operands",
    "kernel_flow": "observe.kernels.operands", "work_outside": "observe.kernels.operands",
    "RefTrace": "observe.kernels.refs", "describe_accesses": "observe.kernels.refs",
    "explained_ref_errors": "observe.kernels.refs", "moves_selection": "observe.kernels.refs",
    "ref_error_hint": "observe.kernels.refs", "ref_leaves": "observe.kernels.refs",
    "ref_trace": "observe.kernels.refs", "refs_in": "observe.kernels.refs", "trace_refs": "observe.kernels.refs",
    "Dma": "observe.kernels.semaphores", "StuckWait": "observe.kernels.semaphores",
    "match_waits": "observe.kernels.semaphores", "one_semaphore": "observe.kernels.semaphores",
    "stuck_waits": "observe.kernels.semaphores",
    "Buffer": "observe.kernels.trace_model", "Event": "observe.kernels.trace_model",
    "TraceUnsupported": "observe.kernels.trace_model", "Window": "observe.kernels.trace_model",
    "RULES": "observe.kernels.trace_rules",
    "HLO_COLLECTIVES": "observe.traces.collectives", "BlockFault": "observe.traces.collectives",
    "Collective": "observe.traces.collectives", "HloCollective": "observe.traces.collectives",
    "by_call": "observe.traces.collectives", "collectives_in": "observe.traces.collectives",
    "compiled_hlo": "observe.traces.collectives", "hlo_collective_shapes": "observe.traces.collectives",
    "hlo_collectives": "observe.traces.collectives", "jaxpr_collectives": "observe.traces.collectives",
    "live_jaxpr": "observe.traces.collectives", "total_steps": "observe.traces.collectives",
    "wrong_blocks": "observe.traces.collectives",
    "LAYOUT_OPS": "observe.traces.dataflow", "OutputOrigin": "observe.traces.dataflow",
    "output_origins": "observe.traces.dataflow",
    "Dim": "observe.traces.jaxprs", "called_function_line": "observe.traces.jaxprs",
    "equations": "observe.traces.jaxprs", "is_var": "observe.traces.jaxprs", "jitted_body": "observe.traces.jaxprs",
    "learner_line": "observe.traces.jaxprs", "region_of": "observe.traces.jaxprs",
    "region_text": "observe.traces.jaxprs", "sendable": "observe.traces.jaxprs", "sub_env": "observe.traces.jaxprs",
    "traced": "observe.traces.jaxprs", "walk_eqns": "observe.traces.jaxprs",
    "EqnRuns": "observe.traces.loops", "Loop": "observe.traces.loops", "eqn_runs": "observe.traces.loops",
    "jaxpr_size": "observe.traces.loops", "line_text": "observe.traces.loops", "loops_in": "observe.traces.loops",
    "times_run": "observe.traces.loops", "traced_jaxpr": "observe.traces.loops", "type_text": "observe.traces.loops",
    "Matmul": "observe.traces.matmuls", "float32_matmuls": "observe.traces.matmuls",
    "matmul_flops": "observe.traces.matmuls", "matmuls_in": "observe.traces.matmuls",
    "matmuls_of": "observe.traces.matmuls", "mflop": "observe.traces.matmuls",
    "repeated_matmuls": "observe.traces.matmuls",
    "Residual": "observe.traces.residuals", "describe_residuals": "observe.traces.residuals",
    "residuals_of": "observe.traces.residuals", "scan_residuals": "observe.traces.residuals",
    "Unknown": "observe.traces.scalars", "apply": "observe.traces.scalars", "const_value": "observe.traces.scalars",
    "is_known": "observe.traces.scalars", "literal_value": "observe.traces.scalars",
    "modelled": "observe.traces.scalars", "read_var": "observe.traces.scalars",
    "unknown_like": "observe.traces.scalars",
    "ShardMismatch": "observe.traces.sharding", "Traced": "observe.traces.sharding",
    "assert_mesh": "observe.traces.sharding", "assert_sharding": "observe.traces.sharding",
    "call_explained": "observe.traces.sharding", "call_traced": "observe.traces.sharding",
    "differing_copies": "observe.traces.sharding", "per_device_bytes": "observe.traces.sharding",
    "shard_mismatches": "observe.traces.sharding", "shard_shapes": "observe.traces.sharding",
    "sharding_text": "observe.traces.sharding", "spec_text": "observe.traces.sharding",
    "traced_once": "observe.traces.sharding",
})

__all__ = [
    "CheckFailed", "check", "fail",
    "BlockMismatch", "assert_array", "assert_dtype", "assert_is_array", "assert_shape", "block_mismatches",
    "describe_value",
    "ProgramBuffers", "parameter_shapes", "program_buffers",
    "STRUCTURAL", "Seen", "fingerprint", "kernels", "maps_shards", "operations", "signature", "structure",
    "ViewCase", "axis_entries", "numpy_index", "numpy_view", "selector_code", "selector_entries", "selectors",
    "view_cases",
    "assert_gave", "check_property",
    "quote_line",
    "RoundingReport", "correctly_rounded", "exact_matmul", "rounding_report",
    "callback_error", "code_names", "defined_names", "describe_exception", "learner_frames", "learner_location",
    "learner_traceback", "raised_in", "store_dtypes", "syntax_message",
    "BACKEND_COMPILE_EVENT", "CompileEvent", "CompileRecorder", "install_listener", "matches_name",
    "own_function_names", "record_compiles", "via_interpreter",
    "Rerun", "called_programs", "program_values", "rerun",
    "Copy", "DonationInfo", "JitCall", "Source", "WarningsCall", "alias_bytes", "argument_copies", "assert_consumed",
    "assert_not_consumed", "call_recording_warnings", "donation_info", "is_consumed", "is_deleted_error", "jit_calls",
    "jitted_functions", "ran_jit_calls", "runs_as_jit_calls",
    "ProgramRun", "RunRecorder", "record_runs",
    "call_is_jax_helper", "eqn_is_jax_helper", "is_jax_helper",
    "JitBuilds", "count_jit_builds", "jit_builds_per_call", "replaced",
    "RowLog", "own_rows", "rows_text", "step",
    "Memory", "Program", "call_jitted", "compile_lowered", "compile_program", "compile_trace", "grad_of_sum",
    "hlo_size", "mib", "over_budget", "size_text", "under_jit",
    "NOT_USABLE_WARNING", "operand_spec", "rebuilt_call",
    "LaterCalls", "later_calls",
    "SilentWait", "silent_wait_message", "watching_waits",
    "compiles_per_call", "consumed_leaves", "donated_leaves", "jitted_candidates", "jitted_step",
    "abstract_tpu", "jitted_once", "needs_tpu", "runs_here", "strict_values", "tpu_fallback",
    "in_executor", "registered",
    "interpreter_failure", "run_strict", "strict_by_default", "strict_params", "tpu_interpret",
    "ClockRead", "Gate", "HostWait", "TimingLog", "WaitRecorder",
    "AfterWarmup", "WatchedCall", "after_warmup", "unreported_compiles", "watched_calls",
    "Accumulator", "TaintPass", "find_accumulators", "taint_pass",
    "Hazard", "first_hazard", "first_read_after_write", "hazard_message", "overlaps", "reads_after_writes",
    "run_aliased", "unrolled_loops",
    "DmaCopy", "DmaReplay", "Hang", "Touch", "WaitMismatch", "replay_dmas",
    "BlockUse", "GridInfo", "VmemItem", "bad_region", "grid_info", "tile_problem", "unwritten_tail", "unwritten_tails",
    "vmem_bytes",
    "KernelTrace", "evaluate_jaxpr", "trace_kernel",
    "Access", "KernelCall", "accesses_in", "describe_lines", "has_primitive", "kernel_call", "kernel_call_of",
    "nested_primitive_counts", "pallas_calls", "primitive_counts",
    "Refusal", "assert_lowers_for_tpu", "lowering_words", "refusal_of", "tpu_refusals",
    "HBM_SPACES", "KernelMemory", "dma_copies", "explain_strict_failure", "hbm_access_message", "kernel_memory",
    "memory_accesses", "ref_spaces", "smem_reads",
    "SPACE_WORDS", "DmaEvent", "MemoryAccess", "RefInfo", "Walker",
    "Flow", "KernelFlow", "kernel_flow", "work_outside",
    "RefTrace", "describe_accesses", "explained_ref_errors", "moves_selection", "ref_error_hint", "ref_leaves",
    "ref_trace", "refs_in", "trace_refs",
    "Dma", "StuckWait", "match_waits", "one_semaphore", "stuck_waits",
    "Buffer", "Event", "TraceUnsupported", "Window",
    "RULES",
    "HLO_COLLECTIVES", "BlockFault", "Collective", "HloCollective", "by_call", "collectives_in", "compiled_hlo",
    "hlo_collective_shapes", "hlo_collectives", "jaxpr_collectives", "live_jaxpr", "total_steps", "wrong_blocks",
    "LAYOUT_OPS", "OutputOrigin", "output_origins",
    "Dim", "called_function_line", "equations", "is_var", "jitted_body", "learner_line", "region_of", "region_text",
    "sendable", "sub_env", "traced", "walk_eqns",
    "EqnRuns", "Loop", "eqn_runs", "jaxpr_size", "line_text", "loops_in", "times_run", "traced_jaxpr", "type_text",
    "Matmul", "float32_matmuls", "matmul_flops", "matmuls_in", "matmuls_of", "mflop", "repeated_matmuls",
    "Residual", "describe_residuals", "residuals_of", "scan_residuals",
    "Unknown", "apply", "const_value", "is_known", "literal_value", "modelled", "read_var", "unknown_like",
    "ShardMismatch", "Traced", "assert_mesh", "assert_sharding", "call_explained", "call_traced", "differing_copies",
    "per_device_bytes", "shard_mismatches", "shard_shapes", "sharding_text", "spec_text", "traced_once",
]

SUBMODULES = tuple(sorted(set(HELPERS.values())))
"""Every submodule that defines a helper (the warm worker imports them all before it forks a grading)."""

_FOLDERS = frozenset({*(m.split(".")[0] for m in SUBMODULES), "inspect"})


# Hidden from type checkers: they read the imports above, and a name that is not a helper is then
# their error instead of an `Any` from here.
if not TYPE_CHECKING:

    def __getattr__(name: str) -> Any:
        """Import the one submodule that defines `name` the first time it is asked for."""
        module = HELPERS.get(name)
        if module is not None:
            value = getattr(importlib.import_module(f"course.grading.{module}"), name)
            globals()[name] = value
            return value
        if name in _FOLDERS:  # `course.grading.judge` before anything imported it
            return importlib.import_module(f"course.grading.{name}")
        raise AttributeError(f"module 'course.grading' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The helpers, with what the package holds already (so a REPL completes every name)."""
    return sorted({*globals(), *__all__})
