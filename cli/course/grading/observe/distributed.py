"""The distributed section: the mesh, how each input and output is laid out, and what the devices exchange.

The call is traced and compiled once (`jax.jit(...).lower(...).compile()`), as the Part 3 graders
do, so the layouts, the jaxpr and the HLO describe one program. Each layout is drawn by JAX's own
`jax.debug.visualize_sharding` (its text captured); the collectives come from the jaxpr, with who
wrote them and how often they run (`course.grading.collectives`), and from the compiled HLO, with
what each moves per device and between which devices (`course.grading.observe.hlo`).
"""

from __future__ import annotations

import contextlib
import io
import math
from pathlib import Path
from typing import Any

import jax
import numpy as np

from course.grading.collectives import jaxpr_collectives
from course.grading.observe import hlo
from course.grading.observe.calls import Call, CallError, leaf_labels
from course.grading.observe.report import each_call, source_lines
from course.grading.sharding import sharding_text

__all__ = ["observe", "picture"]

MAX_LEAVES = 8
"""Leaves of a pytree argument shown one by one (a dict of parameters); the rest are counted."""


def observe(calls: list[Call | CallError], module: Any, path: Path | None) -> list[dict[str, Any]]:
    """For each call: mesh, layouts in and out, and the collectives of its jaxpr and compiled HLO."""
    return each_call(calls, path, _one)


def _one(call: Call, path: Path | None) -> dict[str, Any]:
    """The distributed report of one call, from one trace and one compile."""
    fn, arrays, names = call.traced()
    traced = jax.jit(fn).trace(*arrays)
    compiled = traced.lower().compile()
    outputs = jax.tree_util.tree_leaves(traced.out_info)
    out_names = leaf_labels([traced.out_info], ["result"])
    out_shardings = jax.tree_util.tree_leaves(compiled.output_shardings)
    jaxpr = [_collective(c) for c in jaxpr_collectives(traced.jaxpr, path=path)]
    return {
        "mesh": _mesh(call, arrays),
        "inputs": [_layout(label, leaf.shape, leaf.dtype, leaf.sharding)
                   for label, leaf in _leaves(arrays, names)][:MAX_LEAVES],
        "more_inputs": max(0, len(_leaves(arrays, names)) - MAX_LEAVES),
        "outputs": [_layout(label, o.shape, o.dtype, s)
                    for label, o, s in zip(out_names, outputs, out_shardings, strict=True)][:MAX_LEAVES],
        "jaxpr": jaxpr,
        "hlo": hlo.collectives(compiled.as_text()),
        "source": source_lines(path, {c["line"] for c in jaxpr if c["line"]}),
    }


def _leaves(arrays: list[Any], names: list[str]) -> list[tuple[str, Any]]:
    """(`params['w1']`, array) for every leaf of the array arguments."""
    return list(zip(leaf_labels(arrays, names), jax.tree_util.tree_leaves(arrays), strict=True))


def _mesh(call: Call, arrays: list[Any]) -> dict[str, Any] | None:
    """The mesh the call is about: one passed to it, else the mesh of its first sharded input."""
    meshes = [v for _, v in call.values() if isinstance(v, jax.sharding.Mesh)]
    meshes += [leaf.sharding.mesh for leaf in jax.tree_util.tree_leaves(arrays)
               if isinstance(getattr(leaf, "sharding", None), jax.sharding.NamedSharding)]
    if not meshes:
        return None
    mesh = meshes[0]
    return {"axes": {str(k): int(v) for k, v in mesh.shape.items()},
            "types": [getattr(t, "name", str(t)) for t in mesh.axis_types],
            "devices": np.vectorize(lambda d: d.id)(np.asarray(mesh.devices)).tolist()}


def _layout(label: str, shape: Any, dtype: Any, sharding: Any) -> dict[str, Any]:
    """How one array is laid out: its spec, the block each device holds, how many hold each block, a picture."""
    shape = tuple(shape)
    report: dict[str, Any] = {"name": label, "type": f"{np.dtype(dtype).name}{list(shape)}",
                              "spec": sharding_text(sharding) if sharding is not None else "unknown"}
    if sharding is None:
        return report
    block = tuple(sharding.shard_shape(shape))
    devices = len(sharding.device_set)
    blocks = math.prod(s // b for s, b in zip(shape, block, strict=True) if b) if shape else 1
    report.update(block=list(block), devices=devices, copies=max(1, devices // max(1, blocks)),
                  bytes_per_device=math.prod(block) * np.dtype(dtype).itemsize, picture=picture(shape, sharding))
    return report


def picture(shape: tuple[int, ...], sharding: Any) -> str:
    """JAX's drawing of which device holds which block (1-D and 2-D arrays only), as plain text."""
    if len(shape) not in (1, 2):
        return ""
    buffer = io.StringIO()
    try:
        with contextlib.redirect_stdout(buffer):
            jax.debug.visualize_sharding(shape, sharding, use_color=False, max_width=56, scale=0.5)
    except Exception:  # noqa: BLE001 - a layout JAX cannot draw is described in words instead
        return ""
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines() if line.strip())


def _collective(c: Any) -> dict[str, Any]:
    """One collective of the jaxpr, as plain data."""
    return {"primitive": c.primitive, "lax": c.lax_name, "axes": list(c.axes), "shapes": [list(s) for s in c.shapes],
            "elements": c.elements, "times": c.times, "enclosing": c.enclosing, "line": c.line,
            "perm": [list(p) for p in c.perm] if c.perm is not None else None}
