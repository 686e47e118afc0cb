"""The donation section: which jitted calls donate which inputs, what XLA really aliases, what was consumed.

It reads what graders read (`course.grading.observe.calls.donation`): each jitted call the function makes,
traced with `jit_calls` (its donated inputs, where each comes from, `alias_size_in_bytes` of its
program compiled alone, JAX's "donated buffers were not usable" warning), then the call made for
real, after which every input leaf is either consumed (`is_deleted()`) or still alive.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import jax
from jax import tree_util

from course.grading.inspect.calls import Call, CallError, is_data, leaf_labels
from course.grading.inspect.report import describe_error, each_call, source_lines
from course.grading.observe.calls.donation import (
    Source,
    call_recording_warnings,
    is_consumed,
    is_deleted_error,
    jit_calls,
)
from course.grading.observe.calls.rebuilt import NOT_USABLE_WARNING
from course.grading.observe.calls.steps import donated_leaves, jitted_step

__all__ = ["observe"]


def observe(calls: list[Call | CallError], module: Any, path: Path | None) -> list[dict[str, Any]]:
    """For each call: its jitted calls and their donations, then what the real call consumed."""
    return each_call(calls, path, _one)


def _one(call: Call, path: Path | None) -> dict[str, Any]:
    """The donation report of one call."""
    report: dict[str, Any] = {"jits": [], "inputs": [], "warnings": []}
    try:
        report["jits"] = _jits(call, path)
    except Exception as exc:  # noqa: BLE001 - the trace may fail in the learner's code; the real call says more
        report["trace_error"] = describe_error(exc, path)
    try:
        done = call_recording_warnings(call.run)
        jax.block_until_ready(done.result)
        report["warnings"] = done.not_usable
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - reported beside what was consumed
        report["error"] = describe_error(exc, path)
        report["error"]["read_donated"] = isinstance(exc, Exception) and is_deleted_error(exc)
    report["inputs"] = [_consumption(name, value) for name, value in call.values() if is_data(value)]
    lines = {line for j in report["jits"] for line in (j["line"], j.get("defined_line")) if line}
    report["source"] = source_lines(path, lines)
    return report


def _jits(call: Call, path: Path | None) -> list[dict[str, Any]]:
    """The jitted calls a call makes: itself, when the learner's function is a jit; else each jit it calls."""
    if _is_jitted(call.fn):
        return [_lowered_jit(call)]
    fn, arrays, names = call.traced()
    labels = leaf_labels(arrays, names)
    try:
        calls = jit_calls(fn, *arrays, path=path)
    except ValueError:
        # On an Explicit mesh a call's program cannot be compiled from its operands' types alone;
        # rebuild it on the caller's own arrays instead, as the sharded-step graders do.
        return _rebuilt_jit(call)
    found = []
    for jc in calls:
        found.append({
            "name": jc.name,
            "line": jc.line,
            "defined_line": jc.defined_line if jc.name == "<lambda>" else None,  # its name says nothing
            "donated": [_source_text(s, labels) for d, s in zip(jc.donated, jc.sources, strict=True) if d],
            "kept": [_source_text(s, labels) for d, s in zip(jc.donated, jc.sources, strict=True) if not d],
            "alias_bytes": jc.alias_bytes,
            "not_usable": list(jc.not_usable),
            "outputs": [_spec_text(o) for o in tree_util.tree_leaves(jc.out_info)],
        })
    return found


def _is_jitted(fn: Any) -> bool:
    """True for an object made by `jax.jit`."""
    return isinstance(fn, jax.stages.Wrapped) and callable(getattr(fn, "lower", None))


def _rebuilt_jit(call: Call) -> list[dict[str, Any]]:
    """The first jit a wrapper runs (preferring one that donates), rebuilt and lowered on the call's arrays."""
    found = jitted_step(call.fn, *call.args)
    if found is None:
        return []
    name, lowered = found
    donated = donated_leaves(call.fn, *call.args, names=call.names[:len(call.args)])
    inside = sum(i.donated for i in tree_util.tree_leaves(lowered.args_info)) - len(donated)
    given = [{"of": d, "via": None, "line": None} for d in donated] + [{"of": None, "via": None, "line": None}] * inside
    analysis = lowered.compile().memory_analysis()
    return [{"name": name, "line": None, "donated": given,
             "kept": [], "alias_bytes": int(getattr(analysis, "alias_size_in_bytes", 0) or 0), "not_usable": [],
             "outputs": [_spec_text(o) for o in tree_util.tree_leaves(lowered.out_info)]}]


def _lowered_jit(call: Call) -> dict[str, Any]:
    """The learner's jitted function lowered for the call's own arguments: what it donates, what XLA aliases."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lowered = call.fn.lower(*call.args, **call.kwargs)
    donated = donated_leaves(lowered, names=call.names[:len(call.args)])
    analysis = lowered.compile().memory_analysis()
    return {
        "name": getattr(call.fn, "__name__", "the function"),
        "line": None,
        "donated": [{"of": label, "via": None, "line": None} for label in donated],
        "kept": [],
        "alias_bytes": int(getattr(analysis, "alias_size_in_bytes", 0) or 0),
        "not_usable": [str(w.message).splitlines()[0] for w in caught if NOT_USABLE_WARNING in str(w.message)],
        "outputs": [_spec_text(o) for o in tree_util.tree_leaves(lowered.out_info)],
    }


def _source_text(source: Source, labels: list[str]) -> dict[str, Any]:
    """Where one input of a jitted call comes from: an argument, a copy of one, or neither."""
    if source.arg is None or source.arg >= len(labels):
        return {"of": None, "via": None, "line": None}
    return {"of": labels[source.arg], "via": source.via, "line": source.line}


def _consumption(name: str, value: Any) -> dict[str, Any]:
    """Which leaves of one argument the call consumed."""
    leaves = tree_util.tree_leaves(value)
    labels = leaf_labels([value], [name])
    consumed = [label for label, leaf in zip(labels, leaves, strict=True) if is_consumed(leaf)]
    return {"name": name, "leaves": len(leaves), "consumed": consumed,
            "shapes": [_spec_text(leaf) for leaf in leaves][:8]}


def _spec_text(value: Any) -> str:
    """`float32[1024]` for an array or a ShapeDtypeStruct."""
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is None or dtype is None:
        return type(value).__name__
    return f"{jax.numpy.dtype(dtype).name}{list(shape)}"
