"""The kernels section: each `pallas_call` a call makes, with its grid, blocks, memory spaces, loads, stores and DMAs.

Tracing only (`jax.make_jaxpr`), as the graders' static checks do: nothing runs under the TPU
interpreter here. For every kernel: how it runs (interpreted, or compiled), whether it lowers for a TPU
(`course.grading.observe.kernels.lowering`), its refs with the memory space in their type and the block
the pipeline copies for each operand, the declared aliases, every access and DMA numbered in
program order on the learner's lines (`course.grading.observe.kernels.memory`), and, where an input aliases an
output, each read that follows an overlapping write (`course.grading.observe.kernels.aliasing`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jax

from course.grading.inspect.calls import Call, CallError, leaf_labels
from course.grading.inspect.listing import listing
from course.grading.inspect.report import each_call, source_lines
from course.grading.observe.calls.strict_runs import tpu_fallback
from course.grading.observe.kernels.aliasing import reads_after_writes
from course.grading.observe.kernels.kernels import KernelCall, kernel_call_of
from course.grading.observe.kernels.lowering import refusal_of
from course.grading.observe.kernels.memory import HBM_SPACES, KernelMemory, hbm_access_message, kernel_memory
from course.grading.observe.kernels.memory_walk import SPACE_WORDS, RefInfo
from course.grading.observe.traces.jaxprs import equations, learner_line

__all__ = ["observe", "kernel_report"]


def observe(calls: list[Call | CallError], module: Any, path: Path | None) -> list[dict[str, Any]]:
    """For each call: the program around its kernels, then every kernel in it."""
    return each_call(calls, path, _one)


def _one(call: Call, path: Path | None) -> dict[str, Any]:
    """The kernels of one traced call."""
    fn, arrays, names = call.traced()
    closed = tpu_fallback(lambda: jax.make_jaxpr(fn)(*arrays))  # `emit_pipeline` asks for a TPU, as graders trace it
    arg_names = dict(zip(closed.jaxpr.invars, leaf_labels(arrays, names), strict=False))
    program = listing(closed, arg_names, path, into_kernels=False)
    kernels = [kernel_report(kernel_call_of(e, path), learner_line(e, path), _tpu_text(e, path))
               for e in equations(closed.jaxpr) if e.primitive.name == "pallas_call"]
    lines = {r["line"] for r in program["rows"] if r["line"]}
    return {"program": program, "kernels": kernels, "source": source_lines(path, lines)}


def kernel_report(call: KernelCall, line: int | None, tpu: str | None = None) -> dict[str, Any]:
    """Everything the kernels section shows of one `pallas_call` (`tpu`: what a TPU's lowering refuses of it)."""
    mem = kernel_memory(call)
    names = {var: call.arg_names[i] for i, var in enumerate(call.jaxpr.invars)}
    rows = listing(call.jaxpr, names, call.path)
    lines = {r["line"] for r in rows["rows"] if r["line"]} | ({line} if line else set())
    shown = {r.index: _scoped_name(r, mem, rows["scoped"]) for r in mem.refs}
    return {
        "kernel": call.kernel_name,
        "line": line,
        "interpret": _interpret_text(call.interpret),
        "tpu_refusal": tpu,
        "grid": list(call.grid),
        "steps": call.grid_steps,
        "refs": [_ref(r, call, shown[r.index]) for r in mem.refs if _listed(r)],
        "aliases": [_alias(call, i, j) for i, j in call.input_output_aliases.items()],
        "listing": rows,
        "dmas": _dmas(mem, shown),
        "hazards": [h.message() for h in reads_after_writes(call)] if call.input_output_aliases else [],
        "hbm_accesses": [hbm_access_message(a) for a in mem.in_space(*HBM_SPACES)],
        "source": source_lines(call.path, lines),
    }


def _scoped_name(ref: RefInfo, mem: KernelMemory, scoped: list[str]) -> str:
    """A ref's name; a scoped buffer's is the one the learner's `run_scoped` body gave it (both walks meet
    the scoped buffers in the same program order)."""
    if ref.arg is not None:
        return ref.name
    k = [r.index for r in mem.refs if r.arg is None].index(ref.index)
    return scoped[k] if k < len(scoped) else ref.name


def _listed(ref: RefInfo) -> bool:
    """Whether the refs table shows a ref: all but the semaphores JAX makes itself (`sync_copy`'s scoped one);
    a semaphore the learner asked for in `scratch_shapes` is part of their kernel's design."""
    return ref.space != "semaphore_mem" or ref.arg is not None


def _ref(ref: RefInfo, call: KernelCall, name: str) -> dict[str, Any]:
    """One ref: its role, memory space, type and the block the pipeline copies for it."""
    report: dict[str, Any] = {
        "name": name,
        "role": _role(ref, call),
        "space": SPACE_WORDS.get(ref.space, ref.space),
        "type": f"{ref.dtype.name if ref.dtype is not None else 'semaphore'}{list(ref.shape)}",
        "line": ref.line,
    }
    block = _block(call, ref.arg) if ref.space not in HBM_SPACES else None
    if block is not None:
        report["block"], report["array"] = block
    return report


def _role(ref: RefInfo, call: KernelCall) -> str:
    """What a ref is to the kernel: a scalar-prefetch operand, an input, an output, scratch or scoped."""
    if ref.arg is None:
        return "scoped"
    if ref.arg < call.num_index:
        return "scalar prefetch"
    if ref.arg < call.num_index + call.num_inputs:
        return "input"
    if ref.arg < call.num_index + call.num_inputs + call.num_outputs:
        return "output"
    return "scratch"


def _block(call: KernelCall, arg: int | None) -> tuple[list[int | None], list[int]] | None:
    """(block shape, array shape) the pipeline uses for kernel argument `arg`, if it is a blocked operand."""
    if arg is None or arg < call.num_index:
        return None
    mappings = call.params["grid_mapping"].block_mappings
    j = arg - call.num_index
    if j >= len(mappings):
        return None
    bm = mappings[j]
    shape = [getattr(b, "block_size", None) if not isinstance(b, int) else b for b in bm.block_shape]
    return shape, list(bm.array_aval.shape)


def _alias(call: KernelCall, i: int, j: int) -> dict[str, Any]:
    """One declared alias: operand `i` is output `j`'s buffer, with the two kernel refs' names."""
    inp = call.arg_names[i] if i < len(call.arg_names) else f"operand {i}"
    out_arg = call.output_arg(j)
    out = call.arg_names[out_arg] if out_arg < len(call.arg_names) else f"output {j}"
    return {"input": i, "output": j, "input_ref": inp, "output_ref": out}


def _dmas(mem: KernelMemory, shown: dict[int, str]) -> list[dict[str, Any]]:
    """Every DMA: from which ref into which on which semaphore, whether it is waited, and any read before its wait."""
    out = []
    for d in mem.dmas:
        early = d.read_before_wait
        out.append({"from": shown[d.src.index], "from_space": SPACE_WORDS.get(d.src.space, d.src.space),
                    "to": shown[d.dst.index], "to_space": SPACE_WORDS.get(d.dst.space, d.dst.space),
                    "sem": shown[d.sem.index] if d.sem is not None else None,
                    "line": d.line, "waited": d.waited, "wait_line": d.wait_line, "same_dtype": d.same_dtype,
                    "read_before_wait": early.line if early is not None else None})
    return out


def _interpret_text(interpret: Any) -> str:
    """How the kernel runs here: in the strict TPU interpreter (as every grading on a CPU runs it), in the plain one,
    or compiled."""
    if interpret is True:
        return "interpret=True"
    if not interpret:
        return "compiled"
    return "strict TPU interpreter"


def _tpu_text(eqn: Any, path: Path | None) -> str | None:
    """What a TPU's lowering refuses of one `pallas_call` equation, in its words and at the learner's line."""
    refusal = refusal_of(eqn, path)
    if refusal is None:
        return None
    return refusal.words + (f" (line {refusal.line})" if refusal.line is not None else "")
