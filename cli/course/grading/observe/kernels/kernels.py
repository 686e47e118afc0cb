"""Kernel jaxprs: the `pallas_call`s inside a function, their arguments, loads, stores and primitives.

A grader traces the learner's function with `jax.make_jaxpr`, finds each `pallas_call` (walking
`jit`, `scan`, `cond` and `run_scoped` through the public `jax.extend.core.jaxprs_in_params`),
and asks how often each kernel argument is loaded or stored, and on which of the learner's lines.
Counts are static: a loop body counts once, whatever its trip count.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax.extend as jex
from jax import tree_util

from course.grading.observe.calls.strict_runs import runs_here
from course.grading.observe.traces.jaxprs import (
    Dim,
    equations,
    is_var,
    learner_line,
    region_of,
    region_text,
    sendable,
    sub_env,
    traced,
    walk_eqns,
)

__all__ = [
    "Access", "KernelCall", "pallas_calls", "kernel_call", "kernel_call_of", "primitive_counts",
    "has_primitive", "nested_primitive_counts", "learner_line", "describe_lines", "walk_eqns", "accesses_in",
]

LOADS = frozenset({"get", "masked_load"})
STORES = frozenset({"swap", "masked_swap"})
UPDATES = frozenset({"addupdate"})

@dataclass(frozen=True)
class Access:
    """One load, store or read-modify-write of a kernel argument, in program order."""

    arg: int
    name: str
    kind: str  # "load", "store" or "update" (addupdate: a load and a store at once)
    primitive: str
    region: tuple[Dim, ...] | None
    shape: tuple[int, ...]
    line: int | None
    order: int
    # The shape of the value loaded or stored: the selection's shape, where `shape` is the ref's.
    value_shape: tuple[int, ...] | None = None

    def text(self) -> str:
        """The access written as indexing, e.g. `x_ref[:, 64:]`."""
        return f"{self.name}[{region_text(self.region, self.shape)}]"


@dataclass
class KernelCall:
    """One `pallas_call` found in a traced function: its kernel jaxpr and how its refs map."""

    jaxpr: Any
    params: dict[str, Any]
    arg_names: tuple[str, ...]
    kernel_name: str
    num_index: int
    num_inputs: int
    num_outputs: int
    path: Path | None = None
    _accesses: list[Access] | None = field(default=None, repr=False)

    @property
    def input_output_aliases(self) -> dict[int, int]:
        """The declared aliases as {input operand index: output index}."""
        return dict(self.params.get("input_output_aliases") or ())

    @property
    def interpret(self) -> Any:
        """The `interpret=` argument the call was made with."""
        return self.params.get("interpret")

    @property
    def grid(self) -> tuple[int | None, ...]:
        """The grid, one size per dimension (`()` for a single step); None for a size known only at run time."""
        return tuple(g if isinstance(g, int) else None for g in self.params["grid_mapping"].grid)

    @property
    def grid_steps(self) -> int | None:
        """How many times the kernel body runs: the product of the grid, None if a size is dynamic."""
        return None if None in self.grid else math.prod(self.grid)

    @property
    def input_names(self) -> tuple[str, ...]:
        """Names of the kernel arguments that receive the call's inputs (scalar prefetch first)."""
        return self.arg_names[: self.num_index + self.num_inputs]

    @property
    def output_names(self) -> tuple[str, ...]:
        """Names of the kernel arguments that receive the call's outputs."""
        start = self.num_index + self.num_inputs
        return self.arg_names[start : start + self.num_outputs]

    def output_arg(self, out_index: int) -> int:
        """The kernel argument position of output `out_index`."""
        return self.num_index + self.num_inputs + out_index

    def accesses(self) -> list[Access]:
        """Every load, store and update of a kernel argument, in program order."""
        if self._accesses is None:
            env = {var: i for i, var in enumerate(self.jaxpr.invars)}
            self._accesses = list(_walk(self.jaxpr, env, self.arg_names, self.path, Counter()))
        return self._accesses

    def of(self, name: str, *kinds: str) -> list[Access]:
        """The accesses of argument `name`, optionally only those of the given kinds."""
        return [a for a in self.accesses() if a.name == name and (not kinds or a.kind in kinds)]

    def loads(self, name: str) -> list[Access]:
        """Loads of `name`, counting an `addupdate` as a load too."""
        return self.of(name, "load", "update")

    def stores(self, name: str) -> list[Access]:
        """Stores to `name`, counting an `addupdate` as a store too."""
        return self.of(name, "store", "update")

    def primitives(self) -> Counter[str]:
        """Primitive names in the kernel body, counted recursively."""
        return primitive_counts(self.jaxpr)


def pallas_calls(fn: Callable[..., Any], *args: Any, path: Path | None = None) -> list[KernelCall]:
    """Trace `fn(*args)` and return each `pallas_call` in it, outermost first, in program order."""
    closed = traced(fn, *args)
    return [kernel_call_of(eqn, path) for eqn in equations(closed.jaxpr) if eqn.primitive.name == "pallas_call"]


def kernel_call(kernel: Callable[..., Any], *args: Any, out_shape: Any, path: Path | None = None,
                **pallas_kwargs: Any) -> KernelCall:
    """Trace a `pallas_call` of `kernel` made by the grader itself, so a learner's wrapper cannot hide it."""
    from jax.experimental import pallas as pl

    if not runs_here(kernel) and set(pallas_kwargs) <= {"input_output_aliases"}:
        # The learner's kernel seen from the judge: the executor traces this same call of it, which is read here.
        (found,) = pallas_calls(kernel.traced_there(*(sendable(a) for a in args), kernel=out_shape,
                                                    aliases=pallas_kwargs.get("input_output_aliases")), path=path)
        return found
    call = pl.pallas_call(kernel, out_shape=out_shape, interpret=True, **pallas_kwargs)
    (found,) = pallas_calls(call, *args, path=path)
    return found


def primitive_counts(jaxpr: Any, *, into_kernels: bool = True) -> Counter[str]:
    """Primitive names in a (closed) jaxpr, counted recursively; kernels too unless told not to."""
    counts: Counter[str] = Counter()
    for eqn in equations(getattr(jaxpr, "jaxpr", jaxpr), into_kernels=into_kernels):
        counts[eqn.primitive.name] += 1
    return counts


def has_primitive(jaxpr: Any, *names: str, into_kernels: bool = True) -> bool:
    """Whether any of the named primitives occurs anywhere in the jaxpr."""
    counts = primitive_counts(jaxpr, into_kernels=into_kernels)
    return any(counts[n] for n in names)


def nested_primitive_counts(jaxpr: Any, within: str = "jit") -> Counter[str]:
    """Primitive names counted only inside the bodies of `within` equations (e.g. inside a `jit`)."""
    counts: Counter[str] = Counter()
    for eqn in equations(getattr(jaxpr, "jaxpr", jaxpr)):
        if eqn.primitive.name == within:
            for sub in jex.core.jaxprs_in_params(eqn.params):
                counts.update(primitive_counts(sub))
    return counts


def accesses_in(jaxpr: Any, positions: dict[Any, int], names: tuple[str, ...],
                path: Path | None = None) -> list[Access]:
    """Every load, store and update, in program order, of the refs bound to `positions` ({variable: arg index})."""
    return list(_walk(getattr(jaxpr, "jaxpr", jaxpr), positions, names, path, Counter()))


def describe_lines(accesses: list[Access]) -> str:
    """'lines 12, 12, 13' for a message, or '' when no line is known."""
    lines = [str(a.line) for a in accesses if a.line is not None]
    if not lines:
        return ""
    return f"line {lines[0]}" if len(lines) == 1 else f"lines {', '.join(lines)}"


def kernel_call_of(eqn: Any, path: Path | None) -> KernelCall:
    """Build a KernelCall from a `pallas_call` equation."""
    jaxpr = eqn.params["jaxpr"]
    gm = eqn.params["grid_mapping"]
    debug = getattr(jaxpr, "debug_info", None)
    names = tuple(getattr(debug, "arg_names", None) or ())
    n = len(jaxpr.invars)
    num_index, num_in, num_out = gm.num_index_operands, gm.num_inputs, gm.num_outputs
    if len(names) != n or any(not nm for nm in names):
        names = tuple(f"arg{i}" for i in range(n))  # JAX could not name them: use positions
    src = getattr(debug, "func_src_info", None) or ""
    return KernelCall(jaxpr=jaxpr, params=dict(eqn.params), arg_names=names,
                      kernel_name=src.split(" at ")[0] if src else "kernel",
                      num_index=num_index, num_inputs=num_in, num_outputs=num_out, path=path)


def _walk(jaxpr: Any, env: dict[Any, int], names: tuple[str, ...], path: Path | None,
          counter: Counter[str]) -> Iterator[Access]:
    """Yield accesses to the kernel arguments in `env`, following refs into nested jaxprs."""
    defs: dict[Any, Any] = {}
    for eqn in jaxpr.eqns:
        prim = eqn.primitive.name
        if prim == "program_id":
            # Every `pl.program_id(k)` is a fresh variable; give equal ones one name.
            defs[eqn.outvars[0]] = ("program_id", eqn.params.get("axis"))
        if prim in LOADS | STORES | UPDATES:
            access = _access(eqn, env, names, path, counter, defs)
            if access is not None:
                yield access
            continue
        for sub in jex.core.jaxprs_in_params(eqn.params):
            inner = getattr(sub, "jaxpr", sub)
            nested = sub_env(eqn, inner, env)
            if nested:
                yield from _walk(inner, nested, names, path, counter)


def _access(eqn: Any, env: dict[Any, int], names: tuple[str, ...], path: Path | None,
            counter: Counter[str], defs: dict[Any, Any]) -> Access | None:
    """The Access made by one state primitive, or None if its ref is not a kernel argument."""
    prim = eqn.primitive.name
    ref = eqn.invars[0]
    if not is_var(ref) or ref not in env:
        return None
    if prim.startswith("masked_"):
        transforms = tree_util.tree_unflatten(eqn.params["args_tree"], eqn.invars)[1]
    else:
        skip = 1 if prim == "get" else 2
        transforms = tree_util.tree_unflatten(eqn.params["tree"], eqn.invars[skip:])
    shape = tuple(ref.aval.shape)
    kind = "load" if prim in LOADS else "store" if prim in STORES else "update"
    counter["order"] += 1
    arg = env[ref]
    # A load (and a swap, which returns the old value) has the selection as its output;
    # an addupdate returns nothing, so take the value it adds.
    value = eqn.outvars[0] if eqn.outvars else eqn.invars[1]
    return Access(arg=arg, name=names[arg], kind=kind, primitive=prim,
                  region=region_of(transforms, shape, defs), shape=shape,
                  line=learner_line(eqn, path), order=counter["order"],
                  value_shape=tuple(value.aval.shape))


