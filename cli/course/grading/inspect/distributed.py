"""The distributed section: the mesh, how each input and output is laid out, and what the devices exchange.

The call is traced and compiled once (`jax.jit(...).lower(...).compile()`), as the Part 3 graders
do, so the layouts, the jaxpr and the HLO describe one program. Each layout is drawn by JAX's own
`jax.debug.visualize_sharding` (its text captured); the collectives come from the jaxpr, with who
wrote them and how often they run (`course.grading.observe.traces.collectives`), and from the compiled HLO, with
what each costs a device and along which of the learner's mesh axes it runs (`course.grading.inspect.hlo`).

A plain function that cannot be traced whole under one jit (it reads `x.sharding.mesh`, as a graded
file may, or reshards an input that sits on one device onto the mesh) is run for real instead, and
the programs it compiles are read (`_ran`): a correct file is never shown as raising.
"""

from __future__ import annotations

import contextlib
import io
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jax
import numpy as np

from course.grading.inspect import hlo
from course.grading.inspect.calls import Call, CallError, leaf_labels
from course.grading.inspect.report import describe_error, each_call, source_lines
from course.grading.observe.traces.collectives import jaxpr_collectives
from course.grading.observe.traces.sharding import sharding_text

__all__ = ["compiled_programs", "observe", "picture"]

MAX_LEAVES = 8
"""Leaves of a pytree argument shown one by one (a dict of parameters); the rest are counted."""


def observe(calls: list[Call | CallError], module: Any, path: Path | None) -> list[dict[str, Any]]:
    """For each call: mesh, layouts in and out, and the collectives of its jaxpr and compiled HLO."""
    return each_call(calls, path, _one)


def _one(call: Call, path: Path | None) -> dict[str, Any]:
    """The distributed report of one call, from one trace and one compile (or, see `_ran`, one real run)."""
    fn, arrays, names = call.traced()
    try:
        traced = jax.jit(fn).trace(*arrays)
        compiled = traced.lower().compile()
    except Exception as exc:
        if isinstance(call.fn, jax.stages.Wrapped):
            raise  # the learner's own jit: what it raises is what their call raises
        return _ran(call, path, arrays, names, exc)
    outputs = jax.tree_util.tree_leaves(traced.out_info)
    out_names = leaf_labels([traced.out_info], ["result"])
    out_shardings = jax.tree_util.tree_leaves(compiled.output_shardings)
    mesh = _mesh(call, arrays)
    jaxpr = [_collective(c, mesh) for c in jaxpr_collectives(traced.jaxpr, path=path)]
    return {
        **_inputs(mesh, arrays, names),
        "outputs": [_layout(label, o.shape, o.dtype, s)
                    for label, o, s in zip(out_names, outputs, out_shardings, strict=True)][:MAX_LEAVES],
        "jaxpr": jaxpr,
        "hlo": _named(hlo.collectives(compiled.as_text()), mesh),
        "source": source_lines(path, {c["line"] for c in jaxpr if c["line"]}),
    }


def _ran(call: Call, path: Path | None, arrays: list[Any], names: list[str], exc: Exception) -> dict[str, Any]:
    """The report of a plain function that cannot be traced as one program (it reads what only a real array
    has, such as `x.sharding`, or reshards an input that is not yet on the mesh): the call made for real, with
    the collectives of every program it compiled. Should the real call raise too, that is the error shown."""
    with compiled_programs() as texts:
        result = call.run()
        jax.block_until_ready(result)
    mesh = _mesh(call, arrays)
    leaves = [x for x in jax.tree_util.tree_leaves(result) if isinstance(x, jax.Array)]
    return {
        **_inputs(mesh, arrays, names),
        "outputs": [_layout(label, o.shape, o.dtype, o.sharding)
                    for label, o in zip(leaf_labels([result], ["result"]), leaves, strict=False)][:MAX_LEAVES],
        "jaxpr": [],
        "ran": _first_sentence(describe_error(exc, path)),
        "hlo": _named([c for text in texts for c in hlo.collectives(text)], mesh),
        "source": {},
    }


def _first_sentence(error: dict[str, Any]) -> str:
    """`AttributeError: The 'sharding' attribute is not available on traced array ..., at line 37`."""
    where = f", at {error['where']}" if error.get("where") else ""
    return error["message"].split(". ", 1)[0].rstrip(".") + where


@contextlib.contextmanager
def compiled_programs() -> Iterator[list[str]]:
    """The optimized HLO text of every program XLA compiles inside the block, in order.

    JAX has no public hook that hands over a program it compiles while it runs, so the one method
    every jit's compile goes through is wrapped for the block, and its caches are emptied first,
    so that a program compiled before is compiled, and seen, again.
    """
    from jax._src.interpreters import pxla

    texts: list[str] = []
    original = pxla.MeshComputation.compile

    def recording(self: Any, *args: Any, **kwargs: Any) -> Any:
        """Compile as JAX does, keeping the program's text."""
        executable = original(self, *args, **kwargs)
        texts.extend(m.to_string() for m in executable.xla_extension_executable().hlo_modules())
        return executable

    jax.clear_caches()
    pxla.MeshComputation.compile = recording  # type: ignore[method-assign]
    try:
        yield texts
    finally:
        pxla.MeshComputation.compile = original  # type: ignore[method-assign]


def _inputs(mesh: jax.sharding.Mesh | None, arrays: list[Any], names: list[str]) -> dict[str, Any]:
    """The mesh and the layouts of the input leaves (the first `MAX_LEAVES`; the others counted)."""
    leaves = _leaves(arrays, names)
    return {"mesh": _mesh_report(mesh),
            "inputs": [_layout(label, leaf.shape, leaf.dtype, leaf.sharding) for label, leaf in leaves][:MAX_LEAVES],
            "more_inputs": max(0, len(leaves) - MAX_LEAVES)}


def _named(found: list[dict[str, Any]], mesh: jax.sharding.Mesh | None) -> list[dict[str, Any]]:
    """The HLO collectives, each with the learner's mesh axes its groups run along (None when they are not
    whole slices of the mesh, or there is no mesh)."""
    for c in found:
        groups = hlo.groups_of(c["groups"]) if c["op"] != "collective-permute" else []
        c["axes"] = hlo.axes_of(groups, mesh.devices, list(mesh.axis_names)) if mesh is not None else None
    return found


def _leaves(arrays: list[Any], names: list[str]) -> list[tuple[str, Any]]:
    """(`params['w1']`, array) for every leaf of the array arguments."""
    return list(zip(leaf_labels(arrays, names), jax.tree_util.tree_leaves(arrays), strict=True))


def _mesh(call: Call, arrays: list[Any]) -> jax.sharding.Mesh | None:
    """The mesh the call is about: one passed to it, else the mesh of its first sharded input."""
    meshes = [v for _, v in call.values() if isinstance(v, jax.sharding.Mesh)]
    meshes += [leaf.sharding.mesh for leaf in jax.tree_util.tree_leaves(arrays)
               if isinstance(getattr(leaf, "sharding", None), jax.sharding.NamedSharding)]
    return meshes[0] if meshes else None


def _mesh_report(mesh: jax.sharding.Mesh | None) -> dict[str, Any] | None:
    """The mesh's axes, their types and its devices, as plain data."""
    if mesh is None:
        return None
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


def _collective(c: Any, mesh: jax.sharding.Mesh | None) -> dict[str, Any]:
    """One collective of the jaxpr, as plain data, with what it costs a device when the mesh gives its axes' sizes."""
    itemsize = np.dtype(c.dtypes[0]).itemsize if c.dtypes and c.dtypes[0] else 4
    found = {"primitive": c.primitive, "lax": c.lax_name, "axes": list(c.axes),
             "shapes": [list(s) for s in c.shapes], "elements": c.elements, "bytes": c.elements * itemsize,
             "times": c.times, "enclosing": c.enclosing, "line": c.line,
             "perm": [list(p) for p in c.perm] if c.perm is not None else None}
    sizes = dict(mesh.shape) if mesh is not None else {}
    if all(a in sizes for a in c.axes) and c.lax_name in _HLO_OF:
        n = math.prod(sizes[a] for a in c.axes)
        op = _HLO_OF[c.lax_name]
        keeps = {"reduce-scatter": found["bytes"] // n, "all-gather": found["bytes"] * n}.get(op, found["bytes"])
        found.update(group_size=n, keeps=keeps, sends=hlo.traffic(op, found["bytes"], keeps, n), like=op)
    return found


_HLO_OF = {"psum": "all-reduce", "pmax": "all-reduce", "pmin": "all-reduce", "psum_scatter": "reduce-scatter",
           "all_gather": "all-gather", "all_to_all": "all-to-all", "ppermute": "collective-permute"}
"""The HLO collective each `jax.lax` collective becomes, whose traffic it has."""
