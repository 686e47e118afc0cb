"""The refs section: the `jax.Ref`s a plain function is given or makes, and each load, store and freeze of them.

The call is traced (`jax.make_jaxpr`), as `course.grading.observe.kernels.refs.trace_refs` traces it: a ref among
the arguments (bare, or the leaf of a pytree such as a named view) keeps the argument's name, a
ref made by `jax.new_ref` takes the name the learner's line assigns it. Every access is numbered
in program order with the shape it moves, so "one load of the selection" can be read off.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import jax

from course.grading.inspect.calls import Call, CallError, leaf_labels
from course.grading.inspect.listing import listing
from course.grading.inspect.report import each_call, source_lines
from course.grading.observe.kernels.kernels import primitive_counts

__all__ = ["observe"]


def observe(calls: list[Call | CallError], module: Any, path: Path | None) -> list[dict[str, Any]]:
    """For each call: its refs, its accesses in program order, and the primitives it runs."""
    return each_call(calls, path, _one)


def _one(call: Call, path: Path | None) -> dict[str, Any]:
    """The refs report of one traced call."""
    fn, arrays, names = call.traced()
    closed = jax.make_jaxpr(fn)(*arrays)
    leaves = jax.tree_util.tree_leaves(arrays)
    seeded: dict[Any, str] = {}
    given = []
    for var, leaf, name in zip(closed.jaxpr.invars, leaves, leaf_labels(arrays, names), strict=True):
        seeded[var] = name
        if isinstance(leaf, jax.Ref):
            given.append({"name": name, "type": str(jax.typeof(leaf)), "line": None})
    rows = listing(closed, seeded, path)
    counts: Counter[str] = primitive_counts(closed)
    return {
        "refs": given + [{**m, "made": True} for m in rows["made"]],
        "listing": rows,
        "accesses": _per_ref(rows["rows"]),
        "primitives": dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))),
        "source": source_lines(path, {r["line"] for r in rows["rows"] if r["line"]}),
    }


def _per_ref(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """{ref name: [{"n", "kind", "shape", "line"}, ...]}: what happened to each ref, in program order."""
    found: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if row.get("ref") is not None and row["kind"] in ("load", "store", "update", "freeze"):
            found.setdefault(row["ref"], []).append(
                {"n": row["n"], "kind": row["kind"], "shape": row.get("shape"), "line": row["line"]})
    return found
