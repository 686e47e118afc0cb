"""`course.grading`: the helpers graders use, each imported from its own submodule on first use.

Instructors read `docs/authoring.md` for an example of each helper. A grader writes
`from course.grading import assert_array`: `HELPERS` names the submodule that defines each helper,
and asking for a name imports that submodule and no other, so importing the package itself imports
none of them, nor JAX. The `TYPE_CHECKING` imports say the same to editors and type checkers.
`tests/grading/test_package.py` holds `HELPERS`, `__all__` and those imports to the submodules'
own `__all__`; `python tests/grading/package_table.py` prints all three as they should be.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

# Packed by submodule, as in HELPERS (ruff's import sorting would give each name a line of its own).
# isort: off
if TYPE_CHECKING:
    from course.grading.accumulators import Accumulator, TaintPass, find_accumulators, taint_pass
    from course.grading.aliasing import (
        Hazard, first_hazard, first_read_after_write, overlaps, reads_after_writes, run_aliased, unrolled_loops,
    )
    from course.grading.arrays import (
        BlockMismatch, assert_array, assert_dtype, assert_is_array, assert_shape, block_mismatches, describe_value,
    )
    from course.grading.collectives import (
        HLO_COLLECTIVES, BlockFault, Collective, HloCollective, by_call, collectives_in, compiled_hlo,
        hlo_collective_shapes, hlo_collectives, jaxpr_collectives, live_jaxpr, total_steps, wrong_blocks,
    )
    from course.grading.compiles import (
        BACKEND_COMPILE_EVENT, CompileEvent, CompileRecorder, install_listener, matches_name, own_function_names,
        record_compiles, via_interpreter,
    )
    from course.grading.dataflow import LAYOUT_OPS, OutputOrigin, output_origins
    from course.grading.dma_replay import DmaCopy, DmaReplay, Hang, Touch, WaitMismatch, replay_dmas
    from course.grading.donation import (
        NOT_USABLE_WARNING, Copy, DonationInfo, JitCall, Source, WarningsCall, alias_bytes, argument_copies,
        assert_consumed, assert_not_consumed, call_recording_warnings, donation_info, is_consumed, is_deleted_error,
        jit_calls, jitted_functions, operand_spec, rebuilt_call,
    )
    from course.grading.donors import ProgramBuffers, program_buffers
    from course.grading.executions import ProgramRun, RunRecorder, record_runs
    from course.grading.feedback import CheckFailed, check, fail
    from course.grading.grid import BlockUse, GridInfo, VmemItem, grid_info, tile_problem, unwritten_tail, vmem_bytes
    from course.grading.jaxprs import (
        Dim, called_function_line, equations, is_var, learner_line, region_of, region_text, sub_env, walk_eqns,
    )
    from course.grading.kernel_trace import KernelTrace, evaluate_jaxpr, trace_kernel
    from course.grading.kernels import (
        Access, KernelCall, accesses_in, describe_lines, has_primitive, kernel_call, kernel_call_of,
        nested_primitive_counts, pallas_calls, primitive_counts,
    )
    from course.grading.loops import (
        EqnRuns, Loop, eqn_runs, jaxpr_size, line_text, loops_in, times_run, traced_jaxpr, type_text,
    )
    from course.grading.matmuls import (
        Matmul, float32_matmuls, matmul_flops, matmuls_in, matmuls_of, mflop, repeated_matmuls,
    )
    from course.grading.memory import (
        HBM_SPACES, KernelMemory, dma_copies, explain_strict_failure, hbm_access_message, kernel_memory,
        memory_accesses, ref_spaces, smem_reads,
    )
    from course.grading.memory_walk import SPACE_WORDS, DmaEvent, MemoryAccess, RefInfo, Walker
    from course.grading.named import (
        ViewCase, axis_entries, numpy_index, numpy_view, selector_code, selector_entries, selectors, view_cases,
    )
    from course.grading.operands import Flow, KernelFlow, kernel_flow, work_outside
    from course.grading.ownership import call_is_jax_helper, eqn_is_jax_helper, is_jax_helper
    from course.grading.patching import JitBuilds, count_jit_builds, jit_builds_per_call, replaced
    from course.grading.processes import RowLog, own_rows, rows_text, step
    from course.grading.programs import (
        Memory, Program, call_jitted, compile_lowered, compile_program, grad_of_sum, hlo_size, mib, over_budget,
        size_text, under_jit,
    )
    from course.grading.properties import assert_gave, check_property
    from course.grading.quoting import quote_line
    from course.grading.recompiles import LaterCalls, later_calls
    from course.grading.refs import (
        RefTrace, describe_accesses, explained_ref_errors, moves_selection, ref_error_hint, ref_leaves, trace_refs,
    )
    from course.grading.residuals import Residual, describe_residuals, residuals_of, scan_residuals
    from course.grading.rounding import RoundingReport, correctly_rounded, exact_matmul, rounding_report
    from course.grading.scalars import (
        Unknown, apply, const_value, is_known, literal_value, modelled, read_var, unknown_like,
    )
    from course.grading.semaphores import Dma, StuckWait, match_waits, one_semaphore, stuck_waits
    from course.grading.sharding import (
        ShardMismatch, Traced, assert_mesh, assert_sharding, call_explained, call_traced, differing_copies,
        per_device_bytes, shard_mismatches, shard_shapes, sharding_text, spec_text, traced_once,
    )
    from course.grading.silent_waits import SilentWait, silent_wait_message, watching_waits
    from course.grading.source import (
        callback_error, describe_exception, learner_frames, learner_location, learner_traceback, raised_in,
        syntax_message,
    )
    from course.grading.steps import compiles_per_call, consumed_leaves, donated_leaves, jitted_candidates, jitted_step
    from course.grading.strict_runs import (
        abstract_tpu, jitted_once, needs_tpu, runs_here, strict_values, tpu_fallback,
    )
    from course.grading.tpu import interpreter_failure, run_strict, strict_params, tpu_interpret
    from course.grading.trace_model import Buffer, Event, TraceUnsupported, Window
    from course.grading.trace_rules import RULES
    from course.grading.waits import ClockRead, Gate, HostWait, TimingLog, WaitRecorder

# isort: on

# Each public helper and the submodule that defines it: a name two submodules define cannot be here
# twice, so the test refuses it where a search order would have picked one. Read-only, since learner
# code runs in the process that looks names up here.
HELPERS: Mapping[str, str] = MappingProxyType({
    "Accumulator": "accumulators", "TaintPass": "accumulators", "find_accumulators": "accumulators",
    "taint_pass": "accumulators",
    "Hazard": "aliasing", "first_hazard": "aliasing", "first_read_after_write": "aliasing", "overlaps": "aliasing",
    "reads_after_writes": "aliasing", "run_aliased": "aliasing", "unrolled_loops": "aliasing",
    "BlockMismatch": "arrays", "assert_array": "arrays", "assert_dtype": "arrays", "assert_is_array": "arrays",
    "assert_shape": "arrays", "block_mismatches": "arrays", "describe_value": "arrays",
    "HLO_COLLECTIVES": "collectives", "BlockFault": "collectives", "Collective": "collectives",
    "HloCollective": "collectives", "by_call": "collectives", "collectives_in": "collectives",
    "compiled_hlo": "collectives", "hlo_collective_shapes": "collectives", "hlo_collectives": "collectives",
    "jaxpr_collectives": "collectives", "live_jaxpr": "collectives", "total_steps": "collectives",
    "wrong_blocks": "collectives",
    "BACKEND_COMPILE_EVENT": "compiles", "CompileEvent": "compiles", "CompileRecorder": "compiles",
    "install_listener": "compiles", "matches_name": "compiles", "own_function_names": "compiles",
    "record_compiles": "compiles", "via_interpreter": "compiles",
    "LAYOUT_OPS": "dataflow", "OutputOrigin": "dataflow", "output_origins": "dataflow",
    "DmaCopy": "dma_replay", "DmaReplay": "dma_replay", "Hang": "dma_replay", "Touch": "dma_replay",
    "WaitMismatch": "dma_replay", "replay_dmas": "dma_replay",
    "NOT_USABLE_WARNING": "donation", "Copy": "donation", "DonationInfo": "donation", "JitCall": "donation",
    "Source": "donation", "WarningsCall": "donation", "alias_bytes": "donation", "argument_copies": "donation",
    "assert_consumed": "donation", "assert_not_consumed": "donation", "call_recording_warnings": "donation",
    "donation_info": "donation", "is_consumed": "donation", "is_deleted_error": "donation", "jit_calls": "donation",
    "jitted_functions": "donation", "operand_spec": "donation", "rebuilt_call": "donation",
    "ProgramBuffers": "donors", "program_buffers": "donors",
    "ProgramRun": "executions", "RunRecorder": "executions", "record_runs": "executions",
    "CheckFailed": "feedback", "check": "feedback", "fail": "feedback",
    "BlockUse": "grid", "GridInfo": "grid", "VmemItem": "grid", "grid_info": "grid", "tile_problem": "grid",
    "unwritten_tail": "grid", "vmem_bytes": "grid",
    "Dim": "jaxprs", "called_function_line": "jaxprs", "equations": "jaxprs", "is_var": "jaxprs",
    "learner_line": "jaxprs", "region_of": "jaxprs", "region_text": "jaxprs", "sub_env": "jaxprs",
    "walk_eqns": "jaxprs",
    "KernelTrace": "kernel_trace", "evaluate_jaxpr": "kernel_trace", "trace_kernel": "kernel_trace",
    "Access": "kernels", "KernelCall": "kernels", "accesses_in": "kernels", "describe_lines": "kernels",
    "has_primitive": "kernels", "kernel_call": "kernels", "kernel_call_of": "kernels",
    "nested_primitive_counts": "kernels", "pallas_calls": "kernels", "primitive_counts": "kernels",
    "EqnRuns": "loops", "Loop": "loops", "eqn_runs": "loops", "jaxpr_size": "loops", "line_text": "loops",
    "loops_in": "loops", "times_run": "loops", "traced_jaxpr": "loops", "type_text": "loops",
    "Matmul": "matmuls", "float32_matmuls": "matmuls", "matmul_flops": "matmuls", "matmuls_in": "matmuls",
    "matmuls_of": "matmuls", "mflop": "matmuls", "repeated_matmuls": "matmuls",
    "HBM_SPACES": "memory", "KernelMemory": "memory", "dma_copies": "memory", "explain_strict_failure": "memory",
    "hbm_access_message": "memory", "kernel_memory": "memory", "memory_accesses": "memory", "ref_spaces": "memory",
    "smem_reads": "memory",
    "SPACE_WORDS": "memory_walk", "DmaEvent": "memory_walk", "MemoryAccess": "memory_walk", "RefInfo": "memory_walk",
    "Walker": "memory_walk",
    "ViewCase": "named", "axis_entries": "named", "numpy_index": "named", "numpy_view": "named",
    "selector_code": "named", "selector_entries": "named", "selectors": "named", "view_cases": "named",
    "Flow": "operands", "KernelFlow": "operands", "kernel_flow": "operands", "work_outside": "operands",
    "call_is_jax_helper": "ownership", "eqn_is_jax_helper": "ownership", "is_jax_helper": "ownership",
    "JitBuilds": "patching", "count_jit_builds": "patching", "jit_builds_per_call": "patching", "replaced": "patching",
    "RowLog": "processes", "own_rows": "processes", "rows_text": "processes", "step": "processes",
    "Memory": "programs", "Program": "programs", "call_jitted": "programs", "compile_lowered": "programs",
    "compile_program": "programs", "grad_of_sum": "programs", "hlo_size": "programs", "mib": "programs",
    "over_budget": "programs", "size_text": "programs", "under_jit": "programs",
    "assert_gave": "properties", "check_property": "properties",
    "quote_line": "quoting",
    "LaterCalls": "recompiles", "later_calls": "recompiles",
    "RefTrace": "refs", "describe_accesses": "refs", "explained_ref_errors": "refs", "moves_selection": "refs",
    "ref_error_hint": "refs", "ref_leaves": "refs", "trace_refs": "refs",
    "Residual": "residuals", "describe_residuals": "residuals", "residuals_of": "residuals",
    "scan_residuals": "residuals",
    "RoundingReport": "rounding", "correctly_rounded": "rounding", "exact_matmul": "rounding",
    "rounding_report": "rounding",
    "Unknown": "scalars", "apply": "scalars", "const_value": "scalars", "is_known": "scalars",
    "literal_value": "scalars", "modelled": "scalars", "read_var": "scalars", "unknown_like": "scalars",
    "Dma": "semaphores", "StuckWait": "semaphores", "match_waits": "semaphores", "one_semaphore": "semaphores",
    "stuck_waits": "semaphores",
    "ShardMismatch": "sharding", "Traced": "sharding", "assert_mesh": "sharding", "assert_sharding": "sharding",
    "call_explained": "sharding", "call_traced": "sharding", "differing_copies": "sharding",
    "per_device_bytes": "sharding",
    "shard_mismatches": "sharding", "shard_shapes": "sharding", "sharding_text": "sharding", "spec_text": "sharding",
    "traced_once": "sharding",
    "SilentWait": "silent_waits", "silent_wait_message": "silent_waits", "watching_waits": "silent_waits",
    "callback_error": "source", "describe_exception": "source", "learner_frames": "source",
    "learner_location": "source", "learner_traceback": "source", "raised_in": "source", "syntax_message": "source",
    "compiles_per_call": "steps", "consumed_leaves": "steps", "donated_leaves": "steps", "jitted_candidates": "steps",
    "jitted_step": "steps",
    "abstract_tpu": "strict_runs", "jitted_once": "strict_runs", "needs_tpu": "strict_runs",
    "runs_here": "strict_runs", "strict_values": "strict_runs", "tpu_fallback": "strict_runs",
    "interpreter_failure": "tpu", "run_strict": "tpu", "strict_params": "tpu", "tpu_interpret": "tpu",
    "Buffer": "trace_model", "Event": "trace_model", "TraceUnsupported": "trace_model", "Window": "trace_model",
    "RULES": "trace_rules",
    "ClockRead": "waits", "Gate": "waits", "HostWait": "waits", "TimingLog": "waits", "WaitRecorder": "waits",
})

__all__ = [
    "Accumulator", "TaintPass", "find_accumulators", "taint_pass",
    "Hazard", "first_hazard", "first_read_after_write", "overlaps", "reads_after_writes", "run_aliased",
    "unrolled_loops",
    "BlockMismatch", "assert_array", "assert_dtype", "assert_is_array", "assert_shape", "block_mismatches",
    "describe_value",
    "HLO_COLLECTIVES", "BlockFault", "Collective", "HloCollective", "by_call", "collectives_in", "compiled_hlo",
    "hlo_collective_shapes", "hlo_collectives", "jaxpr_collectives", "live_jaxpr", "total_steps", "wrong_blocks",
    "BACKEND_COMPILE_EVENT", "CompileEvent", "CompileRecorder", "install_listener", "matches_name",
    "own_function_names", "record_compiles", "via_interpreter",
    "LAYOUT_OPS", "OutputOrigin", "output_origins",
    "DmaCopy", "DmaReplay", "Hang", "Touch", "WaitMismatch", "replay_dmas",
    "NOT_USABLE_WARNING", "Copy", "DonationInfo", "JitCall", "Source", "WarningsCall", "alias_bytes",
    "argument_copies", "assert_consumed", "assert_not_consumed", "call_recording_warnings", "donation_info",
    "is_consumed", "is_deleted_error", "jit_calls", "jitted_functions", "operand_spec", "rebuilt_call",
    "ProgramBuffers", "program_buffers",
    "ProgramRun", "RunRecorder", "record_runs",
    "CheckFailed", "check", "fail",
    "BlockUse", "GridInfo", "VmemItem", "grid_info", "tile_problem", "unwritten_tail", "vmem_bytes",
    "Dim", "called_function_line", "equations", "is_var", "learner_line", "region_of", "region_text", "sub_env",
    "walk_eqns",
    "KernelTrace", "evaluate_jaxpr", "trace_kernel",
    "Access", "KernelCall", "accesses_in", "describe_lines", "has_primitive", "kernel_call", "kernel_call_of",
    "nested_primitive_counts", "pallas_calls", "primitive_counts",
    "EqnRuns", "Loop", "eqn_runs", "jaxpr_size", "line_text", "loops_in", "times_run", "traced_jaxpr", "type_text",
    "Matmul", "float32_matmuls", "matmul_flops", "matmuls_in", "matmuls_of", "mflop", "repeated_matmuls",
    "HBM_SPACES", "KernelMemory", "dma_copies", "explain_strict_failure", "hbm_access_message", "kernel_memory",
    "memory_accesses", "ref_spaces", "smem_reads",
    "SPACE_WORDS", "DmaEvent", "MemoryAccess", "RefInfo", "Walker",
    "ViewCase", "axis_entries", "numpy_index", "numpy_view", "selector_code", "selector_entries", "selectors",
    "view_cases",
    "Flow", "KernelFlow", "kernel_flow", "work_outside",
    "call_is_jax_helper", "eqn_is_jax_helper", "is_jax_helper",
    "JitBuilds", "count_jit_builds", "jit_builds_per_call", "replaced",
    "RowLog", "own_rows", "rows_text", "step",
    "Memory", "Program", "call_jitted", "compile_lowered", "compile_program", "grad_of_sum", "hlo_size", "mib",
    "over_budget", "size_text", "under_jit",
    "assert_gave", "check_property",
    "quote_line",
    "LaterCalls", "later_calls",
    "RefTrace", "describe_accesses", "explained_ref_errors", "moves_selection", "ref_error_hint", "ref_leaves",
    "trace_refs",
    "Residual", "describe_residuals", "residuals_of", "scan_residuals",
    "RoundingReport", "correctly_rounded", "exact_matmul", "rounding_report",
    "Unknown", "apply", "const_value", "is_known", "literal_value", "modelled", "read_var", "unknown_like",
    "Dma", "StuckWait", "match_waits", "one_semaphore", "stuck_waits",
    "ShardMismatch", "Traced", "assert_mesh", "assert_sharding", "call_explained", "call_traced", "differing_copies",
    "per_device_bytes",
    "shard_mismatches", "shard_shapes", "sharding_text", "spec_text", "traced_once",
    "SilentWait", "silent_wait_message", "watching_waits",
    "callback_error", "describe_exception", "learner_frames", "learner_location", "learner_traceback",
    "raised_in", "syntax_message",
    "compiles_per_call", "consumed_leaves", "donated_leaves", "jitted_candidates", "jitted_step",
    "abstract_tpu", "jitted_once", "needs_tpu", "runs_here", "strict_values", "tpu_fallback",
    "interpreter_failure", "run_strict", "strict_params", "tpu_interpret",
    "Buffer", "Event", "TraceUnsupported", "Window",
    "RULES",
    "ClockRead", "Gate", "HostWait", "TimingLog", "WaitRecorder",
]

SUBMODULES = tuple(sorted(set(HELPERS.values())))
"""Every submodule that defines a helper (the warm worker imports them all before it forks a grading)."""


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
        if name in SUBMODULES:  # `course.grading.compiles` before anything imported it
            return importlib.import_module(f"course.grading.{name}")
        raise AttributeError(f"module 'course.grading' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The helpers, with what the package holds already (so a REPL completes every name)."""
    return sorted({*globals(), *__all__})
