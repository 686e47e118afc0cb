"""The example calls of an `inspect` section: Python text from `exercise.toml`, made into calls of the learner's code.

A call is one line of Python, evaluated in a namespace holding the learner's module's names, a
few modules (`jax`, `jnp`, `np`, `lax`, `pl`, `pltpu`), sharding names (`P`, `NamedSharding`,
`AxisType`) and input makers (`f32(8, 128)` is a random float32 array of that shape). Before
each call the section's `setup` runs afresh, so a donated input is never reused.

- `f(a, b, k=c)`: the learner's `f` is called on the values of `a`, `b` and `c`.
- anything else (`r[{"dim": 0}]`, `r[0] = 1.0`, `r.slice(...)[...]`): a function of the names
  the setup bound that the line uses, called on their values.

Observers trace a call through `Call.traced`: the array-valued arguments become the traced
inputs, and everything else (a mesh, a Python float, a tuple of blocks) stays as it was given,
as a grader closes over it.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np

__all__ = ["Call", "CallError", "is_data", "leaf_labels", "make_calls", "namespace"]

SEED = 20260101
"""Inputs are random but the same on every inspection, so two runs of one file read alike."""


class CallError(Exception):
    """An example call that cannot be made: its text is not a call, or the setup raised."""


@dataclass
class Call:
    """One example call: its text, the function it runs and the values it passes."""

    text: str
    fn: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    names: tuple[str, ...] = ()
    """A name per positional argument, then per keyword argument (the parameter's name when known)."""

    def run(self) -> Any:
        """Make the call for real."""
        return self.fn(*self.args, **self.kwargs)

    def values(self) -> list[tuple[str, Any]]:
        """(name, value) of every argument, positional first."""
        return list(zip(self.names, [*self.args, *self.kwargs.values()], strict=True))

    def traced(self) -> tuple[Callable[..., Any], list[Any], list[str]]:
        """(function of the array-valued arguments, those arguments, their names): what to trace."""
        slots = self.values()
        dynamic = [i for i, (_, v) in enumerate(slots) if is_data(v)]
        n_args = len(self.args)

        def call_with(*arrays: Any) -> Any:
            """The call, with the traced values in the array-valued slots."""
            values = [v for _, v in slots]
            for i, a in zip(dynamic, arrays, strict=True):
                values[i] = a
            return self.fn(*values[:n_args], **dict(zip(self.kwargs, values[n_args:], strict=True)))

        return call_with, [slots[i][1] for i in dynamic], [slots[i][0] for i in dynamic]


def leaf_labels(values: list[Any], names: list[str]) -> list[str]:
    """A label per flattened leaf of `values`: the argument's name for a lone leaf (an array, a named view
    over one ref), else the name and the leaf's path (`params['w1']`)."""
    labels = []
    for name, value in zip(names, values, strict=True):
        leaves = jax.tree_util.tree_flatten_with_path(value)[0]
        if len(leaves) == 1:
            labels.append(name)
            continue
        labels.extend(name + jax.tree_util.keystr(key) for key, _ in leaves)
    return labels


def is_data(value: Any) -> bool:
    """True for an array, a ref, or a pytree of them: what a call's trace takes as an input."""
    leaves = jax.tree_util.tree_leaves(value)
    return bool(leaves) and all(isinstance(x, jax.Array | np.ndarray | jax.Ref) for x in leaves)


def namespace(module: Any, rng: np.random.Generator) -> dict[str, Any]:
    """The names a call or a setup may use: the learner's module's, then the platform's."""
    import jax.numpy as jnp
    from jax import lax
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import tpu as pltpu
    from jax.sharding import AxisType, NamedSharding, PartitionSpec

    def maker(dtype: Any) -> Callable[..., jax.Array]:
        """A maker of random arrays of `dtype` (normal floats, small non-negative integers)."""

        def make(*shape: int, high: int = 10) -> jax.Array:
            """A random array of `shape`."""
            if np.issubdtype(np.dtype(dtype), np.integer):
                return jnp.asarray(rng.integers(0, high, size=shape), dtype)
            return jnp.asarray(rng.standard_normal(shape), dtype)

        return make

    def put(x: Any, mesh: Any, spec: Any) -> jax.Array:
        """`x` placed on `mesh` as `spec` says (a `P(...)`)."""
        return jax.device_put(x, NamedSharding(mesh, spec))

    def explicit_mesh(shape: tuple[int, ...], names: tuple[str, ...]) -> Any:
        """A mesh over the first devices with every axis Explicit, as the graders build it."""
        return jax.make_mesh(shape, names, axis_types=(AxisType.Explicit,) * len(shape))

    names = {k: v for k, v in vars(module).items() if not k.startswith("__")}
    names.update(jax=jax, jnp=jnp, np=np, lax=lax, pl=pl, pltpu=pltpu, P=PartitionSpec, NamedSharding=NamedSharding,
                 AxisType=AxisType, f32=maker(jnp.float32), bf16=maker(jnp.bfloat16), f16=maker(jnp.float16),
                 i32=maker(jnp.int32), put=put, explicit_mesh=explicit_mesh)
    return names


def make_calls(texts: list[str], setup: str, module: Any) -> list[Call | CallError]:
    """Each text made into a Call, after its own fresh run of `setup`; a CallError says why one cannot be.

    A CallError raised by the learner's code (in the setup, or while an argument is evaluated)
    carries that exception as its cause, so its traceback can name their line.
    """
    rng = np.random.default_rng(SEED)
    return [_one(text, setup, module, rng) for text in texts]


def _one(text: str, setup: str, module: Any, rng: np.random.Generator) -> Call | CallError:
    """The Call for `text`, or the reason it cannot be made."""
    names = namespace(module, rng)
    before = set(names)
    try:
        exec(compile(setup, "<inspect setup>", "exec"), names)  # noqa: S102 - the course author's setup
    except Exception as exc:  # noqa: BLE001 - the learner's code may raise in the setup
        return _because(f"the setup before it (`{_first_line(setup)}`) raised", exc)
    bound = [n for n in names if n not in before]
    try:
        return _parse(text, names, bound)
    except CallError as exc:
        return exc
    except Exception as exc:  # noqa: BLE001 - evaluating an argument may run the learner's code
        return _because("making its arguments raised", exc)


def _because(what: str, exc: Exception) -> CallError:
    """A CallError saying `what` happened, caused by `exc`."""
    error = CallError(what)
    error.__cause__ = exc
    return error


def _parse(text: str, names: dict[str, Any], bound: list[str]) -> Call:
    """A call of the learner's function, or a function of the setup's names the line uses."""
    tree = ast.parse(text, mode="exec")
    if len(tree.body) != 1:
        raise CallError(f"`{text}` should be one line of Python")
    stmt = tree.body[0]
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and not _starred(stmt.value):
        node = stmt.value
        fn = _eval(node.func, names)
        args = tuple(_eval(a, names) for a in node.args)
        kwargs = {k.arg: _eval(k.value, names) for k in node.keywords if k.arg is not None}
        return Call(text, fn, args, kwargs, _arg_names(fn, node, args, kwargs))
    used = list(dict.fromkeys(n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and n.id in bound))
    body = f"return {ast.unparse(stmt.value)}" if isinstance(stmt, ast.Expr) else ast.unparse(stmt)
    source = f"def inspected({', '.join(used)}):\n    {body}\n"
    scope = dict(names)
    exec(compile(source, "<inspect call>", "exec"), scope)  # noqa: S102 - the course author's call
    return Call(text, scope["inspected"], tuple(names[n] for n in used), {}, tuple(used))


def _starred(node: ast.Call) -> bool:
    """Whether a call spreads `*args` or `**kwargs`, which the call form does not take apart."""
    return any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords)


def _eval(node: ast.expr, names: dict[str, Any]) -> Any:
    """The value of one expression of the call."""
    return eval(compile(ast.Expression(node), "<inspect call>", "eval"), names)  # noqa: S307 - the author's text


def _arg_names(fn: Any, node: ast.Call, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, ...]:
    """The parameter each argument binds, from the function's signature; else the argument's text."""
    texts = [ast.unparse(a) for a in node.args]
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return (*texts, *kwargs)
    params = list(bound.signature.parameters)
    positional = [params[i] if i < len(params) and params[i] in bound.arguments else texts[i]
                  for i in range(len(args))]
    return (*positional, *kwargs)


def _first_line(text: str) -> str:
    """The first non-empty line of `text`."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")
