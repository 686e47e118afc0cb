"""The shadow interpreter's rules for the primitives that are not arithmetic.

Grid queries answer from the grid point; ref accesses and DMAs become events with concrete
windows; `cond`, `scan`, `while` and `run_scoped` are followed with exact integer control flow.
A condition the trace cannot know (one computed from floating-point data) stops the trace with
`TraceUnsupported`, naming the learner's line, rather than guessing a branch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from jax import tree_util

from course.grading.observe.kernels.trace_model import Buffer, TraceUnsupported
from course.grading.observe.traces.scalars import Unknown, const_value, is_known, unknown_like

__all__ = ["RULES"]

Rule = Callable[[Any, Any, list[Any], "int | None"], list[Any]]
# A `while` running longer than this is taken for one that never ends.
MAX_WHILE_ITERATIONS = 100_000


def _where(line: int | None) -> str:
    """'line 12' or 'the kernel'."""
    return f"line {line}" if line else "the kernel"


def _program_id(m: Any, eqn: Any, vals: list[Any], line: int | None) -> list[Any]:
    """`pl.program_id(axis)`: the current grid point's index along `axis`."""
    axis = eqn.params["axis"]
    return [np.asarray(m.step[axis] if axis < len(m.step) else 0, np.int32)]


def _num_programs(m: Any, eqn: Any, vals: list[Any], line: int | None) -> list[Any]:
    """`pl.num_programs(axis)`: the grid's size along `axis`."""
    axis = eqn.params["axis"]
    return [np.asarray(m.grid[axis] if axis < len(m.grid) else 1, np.int32)]


def _values_by_id(eqn: Any, vals: list[Any]) -> dict[int, Any]:
    """Each operand variable's value, by the variable's id (indexers hold the variables)."""
    return {id(v): val for v, val in zip(eqn.invars, vals, strict=True)}


def _buffer(value: Any, line: int | None) -> Buffer:
    """The buffer a ref operand stands for."""
    if not isinstance(value, Buffer):
        raise TraceUnsupported(f"{_where(line)} uses a ref the trace cannot follow")
    return value


def _get(m: Any, eqn: Any, vals: list[Any], line: int | None) -> list[Any]:
    """A load: `x_ref[...]`."""
    buf = _buffer(vals[0], line)
    transforms = tree_util.tree_unflatten(eqn.params["tree"], eqn.invars[1:])
    win = m.window(buf, transforms, _values_by_id(eqn, vals))
    m.record("read", eqn, line, window=win, shape=win.shape, dtype=buf.dtype)
    return [m.load(win, eqn.outvars[0])]


def _swap(m: Any, eqn: Any, vals: list[Any], line: int | None) -> list[Any]:
    """A store (`x_ref[...] = v`), which also returns the old value, or an `addupdate`."""
    buf = _buffer(vals[0], line)
    transforms = tree_util.tree_unflatten(eqn.params["tree"], eqn.invars[2:])
    win = m.window(buf, transforms, _values_by_id(eqn, vals))
    add = eqn.primitive.name == "addupdate"
    m.record("update" if add else "write", eqn, line, window=win, shape=win.shape, dtype=buf.dtype)
    old = None if add else m.load(win, eqn.outvars[0])
    m.store(win, vals[1], add=add)
    return [] if add else [old]


def _masked(m: Any, eqn: Any, vals: list[Any], line: int | None) -> list[Any]:
    """`pltpu.load` / `pltpu.store` (masked_load, masked_swap)."""
    args = tree_util.tree_unflatten(eqn.params["args_tree"], list(vals))
    names = tree_util.tree_unflatten(eqn.params["args_tree"], list(eqn.invars))
    buf = _buffer(args[0], line)
    win = m.window(buf, names[1], _values_by_id(eqn, vals))
    if eqn.primitive.name == "masked_load":
        m.record("read", eqn, line, window=win, shape=win.shape, dtype=buf.dtype)
        return [m.load(win, eqn.outvars[0])]
    m.record("write", eqn, line, window=win, shape=win.shape, dtype=buf.dtype)
    old = m.load(win, eqn.outvars[0])
    m.store(win, args[2] if args[3] is None else unknown_like(eqn.outvars[0]))
    return [old]


def _ref_window(m: Any, ref: Any, by_id: dict[int, Any], line: int | None) -> Any:
    """The window a (possibly transformed) ref operand of a DMA names, or None."""
    if ref is None:
        return None
    var = getattr(ref, "ref", ref)
    buf = _buffer(by_id.get(id(var)), line)
    return m.window(buf, getattr(ref, "transforms", ()), by_id)


def _dma(m: Any, eqn: Any, vals: list[Any], line: int | None) -> list[Any]:
    """A DMA start or wait: source, destination and semaphore as windows."""
    src, dst, dst_sem, src_sem, _device = tree_util.tree_unflatten(eqn.params["tree"], eqn.invars)
    by_id = _values_by_id(eqn, vals)
    kind = "dma_start" if eqn.primitive.name == "dma_start" else "dma_wait"
    m.record(kind, eqn, line, src=_ref_window(m, src, by_id, line), dst=_ref_window(m, dst, by_id, line),
             sem=_ref_window(m, dst_sem, by_id, line))
    del src_sem  # local copies signal only the destination's semaphore
    return []


def _semaphore(m: Any, eqn: Any, vals: list[Any], line: int | None) -> list[Any]:
    """A plain semaphore signal, wait or read (recorded; counts are not simulated)."""
    args = tree_util.tree_unflatten(eqn.params["args_tree"], list(eqn.invars)) if "args_tree" in eqn.params else None
    sem = None
    if args is not None and args[0] is not None:
        sem = _ref_window(m, _Transformed(args[0], args[1]), _values_by_id(eqn, vals), line)
    if eqn.primitive.name == "semaphore_read":
        m.record("op", eqn, line, sem=sem)
        return [unknown_like(o) for o in eqn.outvars]
    m.record("signal" if eqn.primitive.name == "semaphore_signal" else "wait", eqn, line, sem=sem)
    return [unknown_like(o) for o in eqn.outvars]


class _Transformed:
    """A ref with its transforms, shaped like the `TransformedRef` a DMA tree holds."""

    def __init__(self, ref: Any, transforms: Any) -> None:
        """Hold the ref variable and its indexers."""
        self.ref, self.transforms = ref, transforms or ()


def _known_int(value: Any, line: int | None, what: str) -> int:
    """A branch index or loop condition as an int, or TraceUnsupported when it depends on data."""
    if not is_known(value):
        raise TraceUnsupported(f"{_where(line)}: the {what} depends on floating-point data, "
                               "which the grader's trace does not follow")
    return int(np.asarray(value).reshape(()))


def _cond(m: Any, eqn: Any, vals: list[Any], line: int | None) -> list[Any]:
    """`lax.cond` / `pl.when`: run the branch the (exact) index picks."""
    branches = eqn.params["branches"]
    index = int(np.clip(_known_int(vals[0], line, "condition"), 0, len(branches) - 1))
    branch = branches[index]
    return m.run(branch.jaxpr, [const_value(c) for c in branch.consts], vals[1:], line)


def _slice_x(x: Any, i: int) -> Any:
    """Row i of a scanned-over operand."""
    return x[i] if is_known(x) else Unknown(tuple(x.shape[1:]), x.dtype)


def _stack(ys: list[Any], var: Any) -> Any:
    """The stacked outputs of a scan, known only when every row is."""
    if ys and all(is_known(y) for y in ys):
        return np.stack(ys).astype(np.dtype(var.aval.dtype))
    return unknown_like(var)


def _scan(m: Any, eqn: Any, vals: list[Any], line: int | None) -> list[Any]:
    """`lax.scan` (a `fori_loop` with static bounds): run the body `length` times."""
    p = eqn.params
    body, length, n_consts, n_carry = p["jaxpr"], int(p["length"]), p["num_consts"], p["num_carry"]
    consts, carry, xs = vals[:n_consts], list(vals[n_consts:n_consts + n_carry]), vals[n_consts + n_carry:]
    rows: list[list[Any]] = []
    order = range(length - 1, -1, -1) if p.get("reverse") else range(length)
    outer = m.iters
    for i in order:
        m.iters = (*outer, i)
        out = m.run(body.jaxpr, [const_value(c) for c in body.consts],
                    [*consts, *carry, *(_slice_x(x, i) for x in xs)], line)
        carry, ys = out[:n_carry], out[n_carry:]
        rows.append(ys)
    m.iters = outer
    if p.get("reverse"):
        rows.reverse()
    ys_vars = eqn.outvars[n_carry:]
    stacked = [_stack([r[k] for r in rows], v) for k, v in enumerate(ys_vars)]
    return [*carry, *stacked]


def _while(m: Any, eqn: Any, vals: list[Any], line: int | None) -> list[Any]:
    """`lax.while_loop`: run the body while the (exact) condition holds."""
    p = eqn.params
    cond, body = p["cond_jaxpr"], p["body_jaxpr"]
    cn, bn = p["cond_nconsts"], p["body_nconsts"]
    cond_consts, body_consts, carry = vals[:cn], vals[cn:cn + bn], list(vals[cn + bn:])
    outer = m.iters
    for i in range(MAX_WHILE_ITERATIONS):
        (go,) = m.run(cond.jaxpr, [const_value(c) for c in cond.consts], [*cond_consts, *carry], line)
        if not _known_int(go, line, "loop condition"):
            m.iters = outer
            return carry
        m.iters = (*outer, i)
        carry = m.run(body.jaxpr, [const_value(c) for c in body.consts], [*body_consts, *carry], line)
    raise TraceUnsupported(f"{_where(line)}: the loop runs more than {MAX_WHILE_ITERATIONS} times")


def _run_scoped(m: Any, eqn: Any, vals: list[Any], line: int | None) -> list[Any]:
    """`pl.run_scoped`: fresh buffers for the body, which also closes over the outer refs."""
    body = eqn.params["jaxpr"]
    fresh = [m.scoped(var.aval, i, line, eqn) for i, var in enumerate(body.invars)]
    return m.run(body, vals, fresh, line)


RULES: dict[str, Rule] = {
    "program_id": _program_id, "num_programs": _num_programs, "get": _get, "swap": _swap, "addupdate": _swap,
    "masked_load": _masked, "masked_swap": _masked, "dma_start": _dma, "dma_wait": _dma,
    "semaphore_signal": _semaphore, "semaphore_wait": _semaphore, "semaphore_read": _semaphore,
    "cond": _cond, "scan": _scan, "while": _while, "run_scoped": _run_scoped,
}
