"""Jaxpr walking shared by the graders: nested equations, learner lines and indexed regions.

A traced function's jaxpr nests others (`jit`, `scan`, `cond`, `while`, `run_scoped`, kernels);
the public `jax.extend.core.jaxprs_in_params` finds them. These helpers follow refs into the
nested jaxprs and compose the indexers of a state access into one region of its base ref.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jax.extend as jex

from course.grading.observe.calls.strict_runs import runs_here

__all__ = ["Dim", "traced", "jitted_body", "sendable", "walk_eqns", "equations",
           "sub_env", "is_var", "region_of", "region_text", "learner_line",
           "called_function_line"]

# One dimension of an indexed region: (key, lo, hi) in the base ref's coordinates. `key` is None
# for a static range; for a dynamic start it names the index value, so two accesses can only be
# compared when they share it. `lo`/`hi` are None when nothing is known about the dimension.
Dim = tuple[Any, int | None, int | None]


def traced(fn: Any, *args: Any, static: tuple[Any, ...] = ()) -> Any:
    """`jax.make_jaxpr(fn)(*args)`, or `fn` itself when it is a trace already (one an `in_executor` observation made
    and sent). In the judge, `fn` is the learner's function seen from afar: the executor traces it and sends the
    trace as data, which is read here as JAX's own objects (`course.engine.wire.jaxpr_objects`), so every conclusion
    drawn from it is drawn in this process.

    `static` arguments follow `args` untraced, as a learner passes them (NumPy lengths a wrapper may read as
    numbers, a tuple of blocks). In the judge the executor then also calls `fn` plainly at the same arguments, and
    the trace must show the kernels, loops and collectives that call ran (`course.engine.judge.consistency`)."""
    if isinstance(fn, jex.core.ClosedJaxpr):
        return fn
    if not runs_here(fn):
        return fn.traced_there(*(sendable(a) for a in args), static=static)
    import jax

    return jax.make_jaxpr(lambda *a: fn(*a, *static))(*args)


def jitted_body(fn: Any, *args: Any) -> Any:
    """The trace a jitted object gives of its own body at these arguments (all of what runs inside its jit, even
    with `inline=True`, which leaves no `jit` equation in a trace around it), or None for a plain function."""
    if not runs_here(fn):
        return fn.traced_there(*(sendable(a) for a in args), body=True)
    if callable(getattr(fn, "trace", None)) and callable(getattr(fn, "lower", None)):
        return fn.trace(*args).jaxpr
    return None


def sendable(arg: Any) -> Any:
    """An argument of a trace as it crosses to the executor: a `jax.ShapeDtypeStruct` as itself (its type only), or
    as a zero array when it carries a sharding (a placement crosses only with an array); anything else as it is."""
    import jax

    if isinstance(arg, jax.ShapeDtypeStruct) and arg.sharding is not None:
        import numpy as np

        return np.zeros(arg.shape, arg.dtype)
    return arg


def walk_eqns(jaxpr: Any, *, into_kernels: bool = True) -> Iterator[tuple[Any, tuple[Any, ...]]]:
    """Every equation of a (closed) jaxpr and its nested jaxprs, in order, with the equations enclosing it."""
    yield from _walk_nested(jaxpr, into_kernels, ())


def _walk_nested(jaxpr: Any, into_kernels: bool, outer: tuple[Any, ...]) -> Iterator[tuple[Any, tuple[Any, ...]]]:
    """`walk_eqns` below the enclosing equations `outer`."""
    for eqn in getattr(jaxpr, "jaxpr", jaxpr).eqns:
        yield eqn, outer
        if eqn.primitive.name == "pallas_call" and not into_kernels:
            continue
        for sub in jex.core.jaxprs_in_params(eqn.params):
            yield from _walk_nested(sub, into_kernels, (*outer, eqn))


def equations(jaxpr: Any, *, into_kernels: bool = True) -> Iterator[Any]:
    """Every equation of a jaxpr and of the jaxprs nested in its parameters, in program order."""
    for eqn, _ in walk_eqns(jaxpr, into_kernels=into_kernels):
        yield eqn


def sub_env(eqn: Any, inner: Any, env: dict[Any, int]) -> dict[Any, int]:
    """Map the kernel refs passed to `eqn` onto the variables of the nested jaxpr `inner`."""
    outer = list(eqn.invars)
    if eqn.primitive.name == "run_scoped" or (inner.constvars and len(inner.constvars) == len(outer)):
        binders = list(inner.constvars)  # run_scoped closes over the outer refs as constvars
    elif eqn.primitive.name == "while":
        cond_n, body_n = eqn.params["cond_nconsts"], eqn.params["body_nconsts"]
        body = eqn.params["body_jaxpr"].jaxpr
        outer = outer[cond_n:] if inner is body else outer[:cond_n] + outer[cond_n + body_n:]
        binders = list(inner.invars)
    else:
        binders = list(inner.invars)
    # Align at the end: `cond` passes its branch index first, the branches do not receive it.
    pairs = zip(reversed(outer), reversed(binders), strict=False)
    return {b: env[o] for o, b in pairs if is_var(o) and o in env}


def is_var(var: Any) -> bool:
    """Literals are not variables and are never kernel refs."""
    return not isinstance(var, jex.core.Literal)


def region_of(transforms: Any, shape: tuple[int, ...], defs: dict[Any, Any]) -> tuple[Dim, ...] | None:
    """Compose the indexers of an access into one region of the base ref, or None if unknown."""
    from jax._src.state.indexing import NDIndexer, Slice  # no public home for these types yet

    fixed: dict[int, Dim] = {}
    view = [(d, (None, 0, size)) for d, size in enumerate(shape)]  # (base dim, current extent)
    for t in transforms or ():
        if not isinstance(t, NDIndexer):
            return None  # a bitcast or reshape: regions are no longer comparable
        new_view = []
        for (base, (key, lo, _)), idx in zip(view, t.indices, strict=False):
            if isinstance(idx, Slice):
                start, skey = _static(idx.start, defs)
                span = (idx.size - 1) * idx.stride + 1 if idx.size else 0
                new_view.append((base, _shift(key, lo, skey, start, span)))
            elif getattr(getattr(idx, "aval", None), "shape", ()) == () or isinstance(idx, int):
                start, skey = _static(idx, defs)
                fixed[base] = _shift(key, lo, skey, start, 1)
            else:  # an array of indices: a gather we do not model
                fixed[base] = ("?", None, None)
        view = new_view
    for base, extent in view:
        fixed[base] = extent
    return tuple(fixed[d] for d in range(len(shape)))


def _static(value: Any, defs: dict[Any, Any]) -> tuple[int | None, Any]:
    """(int value, None) for a static index, or (0, key) naming a dynamic one."""
    if isinstance(value, int):
        return value, None
    if isinstance(value, jex.core.Literal):
        return int(value.val), None
    return 0, defs.get(value, ("var", id(value)))


def _shift(key: Any, lo: int | None, skey: Any, start: int | None, span: int) -> Dim:
    """The extent `[lo + start, lo + start + span)`, symbolic when either part is dynamic."""
    if lo is None or start is None or (key is not None and skey is not None):
        return ("?", None, None)
    base = lo + start
    return (key if key is not None else skey, base, base + span)


def learner_line(eqn: Any, path: Path | None) -> int | None:
    """The line of the learner's file that made `eqn` (innermost frame), or None."""
    traceback = getattr(eqn.source_info, "traceback", None)
    if traceback is None:
        return None
    target = str(path) if path is not None else None
    for frame in traceback.frames:  # innermost first
        if target is not None and frame.file_name == target:
            return frame.line_num
        if target is None and "/jax/" not in frame.file_name and "/course/" not in frame.file_name:
            return frame.line_num
    return None


def called_function_line(eqn: Any, path: Path | None) -> int | None:
    """The line of the learner's file where the function a `jit` equation calls was written, or None.

    For a lambda this is the lambda's own line, which its name (`<lambda>`) cannot point at.
    """
    debug = getattr(getattr(eqn.params.get("jaxpr"), "jaxpr", None), "debug_info", None)
    src = str(getattr(debug, "func_src_info", "") or "")  # "<lambda> at /path/file.py:3"
    _, _, where = src.rpartition(" at ")
    file, _, line = where.rpartition(":")
    if not line.isdigit() or (path is not None and file != str(path)):
        return None
    return int(line)


def region_text(region: tuple[Dim, ...] | None, shape: tuple[int, ...]) -> str:
    """Indexing text for a region: `:` for a whole dimension, `a:b`, `i`, or `?` when dynamic."""
    if region is None:
        return "..."
    parts = []
    for (key, lo, hi), size in zip(region, shape, strict=False):
        if lo is None or key is not None:
            parts.append("?")
        elif lo == 0 and hi == size:
            parts.append(":")
        else:
            parts.append(str(lo) if hi == lo + 1 else f"{lo or ''}:{'' if hi == size else hi}")
    return "..." if all(p == ":" for p in parts) else ", ".join(parts)
