"""A jitted step over pytrees: the leaves it consumed or donated, the jit behind a wrapper, compiles after warm-up.

A training step takes dicts of sharded arrays. Donation is decided per leaf, so a check names the
leaves (`params['w1']`) that were consumed (`is_deleted()` after the call) or that the step asks to
donate (`lower(...).args_info`). A learner may call the step through a thin wrapper, or keep the
jit in a dict or an object: `jitted_step` finds the jit that a function really runs.
"""

from __future__ import annotations

import contextlib
import types
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.extend as jex
import numpy as np
from jax import tree_util

from course.grading.observe.calls.compiles import CompileRecorder
from course.grading.observe.calls.donation import is_consumed
from course.grading.observe.calls.rebuilt import operand_spec, rebuilt_call

__all__ = [
    "compiles_per_call",
    "consumed_leaves",
    "donated_leaves",
    "jitted_candidates",
    "jitted_step",
]


def consumed_leaves(tree: Any, name: str) -> list[str]:
    """Paths such as `params['w1']` of the leaves of `tree` whose buffers are gone (donated or deleted)."""
    flat, _ = tree_util.tree_flatten_with_path(tree)
    return [name + tree_util.keystr(path) for path, leaf in flat if is_consumed(leaf)]


def donated_leaves(fn: Any, *args: Any, names: Sequence[str]) -> list[str]:
    """Paths of the argument leaves that `fn(*args)` asks to donate; `names` names the arguments.

    For a jitted `fn` this reads `fn.lower(*args).args_info` (a `jax.stages.Lowered` may be given
    instead, without args). For a plain function (a wrapper) it traces `fn` over the array leaves
    (Python numbers are passed as they are) and reads the `donated_invars` of each jit it calls,
    following the caller's own leaves.
    """
    if isinstance(fn, jax.stages.Lowered):
        return _donated_by_args_info(fn.args_info, names)
    if callable(getattr(fn, "lower", None)):
        return _donated_by_args_info(fn.lower(*args).args_info, names)
    closed, traced = _trace_arrays(fn, args)
    leaf_of = {var: path for var, (path, _) in zip(closed.jaxpr.invars, traced, strict=True)}
    donated: list[str] = []
    for eqn in closed.jaxpr.eqns:
        for var, flag in zip(eqn.invars, eqn.params.get("donated_invars", ()), strict=False):
            path = leaf_of.get(var) if flag and not isinstance(var, jex.core.Literal) else None
            text = _path_text(path, names) if path is not None else None
            if text is not None and text not in donated:
                donated.append(text)
    return donated


def _is_array(leaf: Any) -> bool:
    """Whether a leaf is an array (traced when a wrapper is traced), not a Python number kept as it is."""
    return isinstance(leaf, jax.Array | np.ndarray | jax.ShapeDtypeStruct)


def _trace_arrays(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[Any, list[tuple[Any, Any]]]:
    """The jaxpr of `fn(*args)` with only the array leaves traced, and (path, leaf) of each of them.

    A Python number stays a Python number, as it is when the learner's step is called: a wrapper
    may use it as a dict key or an `lru_cache` argument, which a tracer cannot be.
    """
    flat, tree = tree_util.tree_flatten_with_path(tuple(args))
    traced = [(path, leaf) for path, leaf in flat if _is_array(leaf)]

    def on_arrays(*arrays: Any) -> Any:
        given = iter(arrays)
        leaves = [next(given) if _is_array(leaf) else leaf for _, leaf in flat]
        return fn(*tree_util.tree_unflatten(tree, leaves))

    return jax.make_jaxpr(on_arrays)(*(leaf for _, leaf in traced)), traced


def _donated_by_args_info(args_info: Any, names: Sequence[str]) -> list[str]:
    """The donated leaves of a Lowered's `args_info`, a pytree `((args...), {kwargs})` of ArgInfo."""
    flat, _ = tree_util.tree_flatten_with_path(args_info)
    return [_path_text(path[1:], names) if path[0].idx == 0 else _kwarg_text(path[1:])
            for path, info in flat if info.donated]


def _path_text(path: tuple[Any, ...], names: Sequence[str]) -> str:
    """`names[i]` followed by the rest of the key path, for a path starting with argument index i."""
    index = path[0].idx
    head = names[index] if index < len(names) else f"argument {index}"
    return head + tree_util.keystr(tuple(path[1:]))


def _kwarg_text(path: tuple[Any, ...]) -> str:
    """The keyword argument's name followed by the rest of the key path."""
    return str(path[0].key) + tree_util.keystr(tuple(path[1:]))


def jitted_candidates(fn: Any, module: types.ModuleType | None = None) -> dict[str, Any]:
    """Jitted functions that `fn` may run: `fn` itself, its closure, and the module's globals.

    Values inside module-level dicts, lists, tuples and objects (one level down) count too, so a
    jit kept in a table or held by an object is found as well as `step = jax.jit(...)`.
    """
    found: dict[str, Any] = {}
    places: list[tuple[str, Any]] = [(getattr(fn, "__name__", "the function"), fn)]
    code = getattr(fn, "__code__", None)
    for name, cell in zip(code.co_freevars if code else (), getattr(fn, "__closure__", None) or (), strict=False):
        with contextlib.suppress(ValueError):  # an empty cell
            places.append((name, cell.cell_contents))
    if module is not None:
        places.extend((n, v) for n, v in vars(module).items() if not n.startswith("__"))
    for name, value in places:
        for inner_name, inner in [(name, value), *_members(name, value)]:
            if _is_jitted(inner) and all(inner is not f for f in found.values()):
                found[inner_name] = inner
    return found


def _members(name: str, value: Any) -> list[tuple[str, Any]]:
    """(name, value) of the items of a dict, list or tuple, or the attributes of a plain object."""
    if isinstance(value, dict):
        return [(f"{name}[{k!r}]", v) for k, v in value.items()]
    if isinstance(value, list | tuple):
        return [(f"{name}[{i}]", v) for i, v in enumerate(value)]
    if isinstance(value, types.ModuleType | type) or _is_jitted(value):
        return []
    attrs = getattr(value, "__dict__", None)
    return [(f"{name}.{k}", v) for k, v in attrs.items()] if isinstance(attrs, dict) else []


def _is_jitted(value: Any) -> bool:
    """True for an object made by `jax.jit`."""
    return isinstance(value, jax.stages.Wrapped) and callable(getattr(value, "lower", None))


def jitted_step(fn: Any, *args: Any, module: types.ModuleType | None = None) -> tuple[str, Any] | None:
    """(name, `jax.stages.Lowered`) of the jit that `fn(*args)` runs, or None when it runs none.

    A jitted `fn` is lowered as it is. A wrapper is traced, and the first jit it calls (preferring
    one that donates) is rebuilt from its jaxpr with the same donations and shardings, so the
    wrapper may pass its arguments in any order or by keyword. When the wrapper cannot be traced
    (a static argument given a traced value), the jitted candidates that accept `args` are tried,
    and last the wrapper is traced over its arrays only, its Python numbers kept as they are (a
    jit cached per learning rate needs a hashable one).
    """
    if _is_jitted(fn):
        with contextlib.suppress(Exception):
            return getattr(fn, "__name__", "the function"), fn.lower(*args)
    with contextlib.suppress(Exception):  # e.g. a static argument traced: try the candidates
        rebuilt = _rebuilt_jit(fn, args, arrays_only=False)
        if rebuilt is not None:
            return rebuilt
    for name, jitted in jitted_candidates(fn, module).items():
        try:
            return name, jitted.lower(*args)
        except Exception:  # noqa: BLE001, S112 - a jitted function with another signature
            continue
    with contextlib.suppress(Exception):
        return _rebuilt_jit(fn, args, arrays_only=True)
    return None


def _rebuilt_jit(fn: Callable[..., Any], args: tuple[Any, ...], *, arrays_only: bool) -> tuple[str, Any] | None:
    """The first jit `fn` calls (preferring one that donates), rebuilt from its jaxpr and lowered
    on the caller's own arrays where they flow straight in."""
    if arrays_only:
        closed, traced = _trace_arrays(fn, args)
        leaves = [leaf for _, leaf in traced]
    else:
        closed, leaves = jax.make_jaxpr(fn)(*args), tree_util.tree_leaves(args)
    value_of = dict(zip(closed.jaxpr.invars, leaves, strict=True))
    jits = [e for e in closed.jaxpr.eqns if e.primitive.name == "jit"]
    if not jits:
        return None
    eqn = next((e for e in jits if any(e.params["donated_invars"])), jits[0])
    operands = [_operand(v, value_of) for v in eqn.invars]
    return str(eqn.params.get("name", "jit")), rebuilt_call(eqn).lower(*operands)


def _operand(var: Any, value_of: dict[Any, Any]) -> Any:
    """The caller's array behind a jit operand, a literal's value, or the shape of a value computed on the way."""
    if isinstance(var, jex.core.Literal):
        return var.val
    return value_of[var] if var in value_of else operand_spec(var)


def compiles_per_call(fn: Callable[..., Any], calls: Sequence[tuple[Any, ...]],
                      names: set[str]) -> list[list[str]]:
    """Call `fn(*args)` for each tuple in `calls`; for each call, the compiles of functions in `names`."""
    seen = []
    for args in calls:
        with CompileRecorder(names) as rec:
            jax.block_until_ready(fn(*args))
        seen.append(rec.fun_names())
    return seen
