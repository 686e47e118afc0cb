"""Accumulators of a kernel, found by a forward taint pass over its jaxpr.

A value is tainted by what it was computed from: `dot` when a `dot_general` result went into it,
and `ref R` when a load of ref R did (R is the root the ref stands for: a kernel argument or a
`pl.run_scoped` allocation, through `cond`, `scan`, `while`, `run_scoped` and `jit`). What is
stored in a ref taints later loads of it, so the taint of `acc_ref` carries that of `v_ref`
after `acc_ref[...] += p @ v_ref[...]`. The pass repeats until nothing changes, since a loop or
a later grid step reads what an earlier one stored.

An **accumulator** is a ref that receives a store whose value depends both on a `dot_general`
and on a load of that same ref (an `addupdate` loads it implicitly). That one rule finds
`acc_ref[...] += jnp.dot(...)`, `o_ref[...] += ...` (the JAX docs' style), a
`jnp.where(k == 0, 0, acc_ref[...]) + ...`, a `fori_loop` over sub-blocks, and flash
attention's running max, running sum and accumulator alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import jax.extend as jex
import numpy as np
from jax import tree_util

from course.grading.observe.kernels.kernels import KernelCall
from course.grading.observe.traces.jaxprs import learner_line

__all__ = ["Accumulator", "TaintPass", "find_accumulators", "taint_pass"]

Taint = frozenset
DOT = "dot"
_MAX_PASSES = 8


@dataclass(frozen=True)
class Root:
    """What a ref variable stands for: a kernel argument or a run_scoped allocation."""

    key: Any
    name: str
    arg: int | None
    space: str
    dtype: np.dtype | None
    shape: tuple[int, ...]
    line: int | None


@dataclass(frozen=True)
class Accumulator:
    """A ref that sums `dot_general` results into itself, and the learner's line that does it."""

    root: Root
    line: int | None
    eqn: Any = field(compare=False, repr=False)

    @property
    def name(self) -> str:
        """The kernel parameter's name, or a description of a scoped buffer."""
        return self.root.name

    @property
    def dtype(self) -> np.dtype | None:
        """What the accumulator holds."""
        return self.root.dtype

    @property
    def space(self) -> str:
        """Its memory space: 'vmem' (scratch), 'default' (a blocked operand), ..."""
        return self.root.space

    @property
    def shape(self) -> tuple[int, ...]:
        """Its shape."""
        return self.root.shape


@dataclass
class TaintPass:
    """The taint of every variable and the content of every ref, after the pass reached a fixpoint."""

    roots: dict[Any, Root] = field(default_factory=dict)
    taints: dict[Any, Taint] = field(default_factory=dict)
    content: dict[Any, Taint] = field(default_factory=dict)
    stores: dict[int, tuple[Root, Taint, Any, int | None]] = field(default_factory=dict)

    def of(self, var: Any) -> Taint:
        """The taint of one variable (a literal has none)."""
        return self.taints.get(var, Taint()) if not isinstance(var, jex.core.Literal) else Taint()

    def depends_on(self, var: Any, name: str) -> bool:
        """Whether `var` was computed from a load of the kernel argument called `name`."""
        return any(isinstance(t, tuple) and t[0] == "ref" and self.roots[t[1]].name == name for t in self.of(var))

    def accumulators(self) -> list[Accumulator]:
        """The refs that receive a store depending on a dot and on themselves, in program order."""
        found: dict[Any, Accumulator] = {}
        for root, taint, eqn, line in self.stores.values():
            if DOT in taint and ("ref", root.key) in taint and root.key not in found:
                found[root.key] = Accumulator(root, line, eqn)
        return list(found.values())


def taint_pass(call: KernelCall) -> TaintPass:
    """Run the taint pass over the kernel of `call` until the refs' contents stop changing."""
    result = TaintPass()
    walker = _Walker(result, call.path)
    refs = {}
    for i, var in enumerate(call.jaxpr.invars):
        root = walker.root(("arg", i), call.arg_names[i], i, var.aval, None)
        refs[var] = root.key
    for _ in range(_MAX_PASSES):
        before = dict(result.content)
        walker.walk(call.jaxpr, refs, {})
        if result.content == before:
            break
    return result


def find_accumulators(call: KernelCall) -> list[Accumulator]:
    """The accumulators of the kernel of `call` (see the module's docstring)."""
    return taint_pass(call).accumulators()


def _space(aval: Any) -> str:
    """A ref's memory space as a lower-case word."""
    space = getattr(aval, "memory_space", None)
    return "default" if space is None else str(getattr(space, "value", space)).lower()


@dataclass
class _Walker:
    """One walk of the pass: refs map to roots, values to taints."""

    out: TaintPass
    path: Any

    def root(self, key: Any, name: str, arg: int | None, aval: Any, line: int | None) -> Root:
        """Record (once) and return the root for `key`."""
        if key not in self.out.roots:
            try:
                dtype = np.dtype(aval.dtype)
            except TypeError:
                dtype = None
            self.out.roots[key] = Root(key, name, arg, _space(aval), dtype, tuple(getattr(aval, "shape", ())), line)
        return self.out.roots[key]

    def taint(self, var: Any, env: dict[Any, Taint]) -> Taint:
        """A variable's taint in this walk."""
        return Taint() if isinstance(var, jex.core.Literal) else env.get(var, Taint())

    def set(self, var: Any, taint: Taint, env: dict[Any, Taint]) -> None:
        """Give a variable its taint, here and in the pass's record (unions over visits)."""
        env[var] = env.get(var, Taint()) | taint
        self.out.taints[var] = self.out.taints.get(var, Taint()) | taint

    def walk(self, jaxpr: Any, refs: dict[Any, Any], env: dict[Any, Taint]) -> list[Taint]:
        """Propagate taints through `jaxpr`; returns its outputs' taints."""
        for eqn in jaxpr.eqns:
            ins = [self.taint(v, env) for v in eqn.invars]
            for var, taint in zip(eqn.outvars, self.equation(eqn, ins, refs, env), strict=True):
                self.set(var, taint, env)
        return [self.taint(v, env) for v in jaxpr.outvars]

    def equation(self, eqn: Any, ins: list[Taint], refs: dict[Any, Any], env: dict[Any, Taint]) -> list[Taint]:
        """The outputs' taints of one equation, following refs and nested jaxprs."""
        prim = eqn.primitive.name
        if prim in ("get", "masked_load", "swap", "masked_swap", "addupdate"):
            return self.state(eqn, ins, refs)
        if prim == "dot_general":
            return [Taint().union(*ins) | {DOT}]
        if prim == "cond":
            return self.cond(eqn, ins, refs)
        if prim in ("scan", "while"):
            return self.loop(eqn, ins, refs)
        if prim == "run_scoped":
            body = eqn.params["jaxpr"]
            inner = _mapped(eqn.invars, body.constvars, refs)
            line = learner_line(eqn, self.path)
            for i, var in enumerate(body.invars):
                key = ("scoped", id(eqn), i)
                self.root(key, f"the run_scoped buffer {i}" + (f" made at line {line}" if line else ""),
                          None, var.aval, line)
                inner[var] = key
            sub_env = dict(zip(body.constvars, ins, strict=True))
            return self.walk(body, inner, sub_env)
        body = _call_body(eqn)
        if body is not None:
            inner_jaxpr = getattr(body, "jaxpr", body)
            inner = _mapped(eqn.invars, inner_jaxpr.invars, refs)
            return self.walk(inner_jaxpr, inner, dict(zip(inner_jaxpr.invars, ins, strict=True)))
        return [Taint().union(*ins)] * len(eqn.outvars)

    def state(self, eqn: Any, ins: list[Taint], refs: dict[Any, Any]) -> list[Taint]:
        """A load or store: loads carry the ref and its content; stores add to the content."""
        prim, ref = eqn.primitive.name, eqn.invars[0]
        key = None if isinstance(ref, jex.core.Literal) else refs.get(ref)
        if key is None:
            return [Taint().union(*ins)] * len(eqn.outvars)
        loaded = Taint({("ref", key)}) | self.out.content.get(key, Taint())
        if prim in ("get", "masked_load"):
            return [loaded]
        value = tree_util.tree_unflatten(eqn.params["args_tree"], ins)[2] if prim == "masked_swap" else ins[1]
        stored = value | ({("ref", key)} if prim == "addupdate" else set())
        self.out.content[key] = self.out.content.get(key, Taint()) | value
        if id(eqn) not in self.out.stores or not stored <= self.out.stores[id(eqn)][1]:
            old = self.out.stores.get(id(eqn), (None, Taint()))[1]
            self.out.stores[id(eqn)] = (self.out.roots[key], old | stored, eqn, learner_line(eqn, self.path))
        return [] if prim == "addupdate" else [loaded]

    def cond(self, eqn: Any, ins: list[Taint], refs: dict[Any, Any]) -> list[Taint]:
        """Every branch may run: outputs take the union of the branches'."""
        outs = [Taint()] * len(eqn.outvars)
        for branch in eqn.params["branches"]:
            inner = branch.jaxpr
            sub_refs = _mapped(eqn.invars[1:], inner.invars, refs)
            got = self.walk(inner, sub_refs, dict(zip(inner.invars, ins[1:], strict=True)))
            outs = [a | b for a, b in zip(outs, got, strict=True)]
        return outs

    def loop(self, eqn: Any, ins: list[Taint], refs: dict[Any, Any]) -> list[Taint]:
        """A scan or while: walk the body until the carried taints stop growing."""
        p = eqn.params
        if eqn.primitive.name == "scan":
            n_consts, n_carry = p["num_consts"], p["num_carry"]
            bodies = [(p["jaxpr"].jaxpr, list(eqn.invars), ins[:n_consts], slice(n_consts, n_consts + n_carry))]
        else:
            cn, bn = p["cond_nconsts"], p["body_nconsts"]
            n_carry = len(eqn.invars) - cn - bn
            bodies = [(p["cond_jaxpr"].jaxpr, eqn.invars[:cn] + eqn.invars[cn + bn:], ins[:cn], slice(cn + bn, None)),
                      (p["body_jaxpr"].jaxpr, list(eqn.invars[cn:]), ins[cn:cn + bn], slice(cn + bn, None))]
        where = bodies[-1][3]
        carry, rest = ins[where][:n_carry], ins[where][n_carry:]
        got: list[Taint] = []
        for _ in range(_MAX_PASSES):
            for inner, operands, fixed, _ in bodies:
                sub_refs = _mapped(operands, inner.invars, refs)
                got = self.walk(inner, sub_refs, dict(zip(inner.invars, [*fixed, *carry, *rest], strict=True)))
            grown = [a | b for a, b in zip(carry, got[:n_carry], strict=True)]
            if grown == carry:
                break
            carry = grown
        return [*carry, *got[n_carry:]]


def _mapped(outer: list[Any], inner: list[Any], refs: dict[Any, Any]) -> dict[Any, Any]:
    """Map the refs among `outer` onto the matching variables of a nested jaxpr (literals are never refs)."""
    return {b: refs[o] for o, b in zip(outer, inner, strict=True) if not isinstance(o, jex.core.Literal) and o in refs}


def _call_body(eqn: Any) -> Any:
    """The jaxpr a call-like equation runs on exactly its operands, if it has one."""
    for sub in jex.core.jaxprs_in_params(eqn.params):
        inner = getattr(sub, "jaxpr", sub)
        if len(inner.invars) == len(eqn.invars) and len(inner.outvars) == len(eqn.outvars):
            return sub
    return None
