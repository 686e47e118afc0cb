"""A jaxpr as a learner reads it: one row per equation, refs by their own names, each load, store and DMA numbered.

JAX prints a jaxpr with fresh letters for every variable, so the same ref is `a` in a kernel and
`c` inside its `run_scoped`. Here every ref keeps one name through nested jaxprs (a kernel's
parameter names, a scoped buffer's name in the learner's `run_scoped` body), each equation is
printed by JAX's own printer, and every state access (`get`, `swap`, `addupdate`, their masked
forms) and DMA (`dma_start`, `dma_wait`) gets a number in program order and the learner's line.
"""

from __future__ import annotations

import linecache
import re
from pathlib import Path
from typing import Any

import jax.extend as jex

from course.grading.observe.traces.jaxprs import learner_line, sub_env

__all__ = ["EVENTS", "MAX_ROWS", "listing"]

EVENTS = {"get": "load", "masked_load": "load", "swap": "store", "masked_swap": "store", "addupdate": "update",
          "dma_start": "DMA start", "dma_wait": "DMA wait", "new_ref": "new ref", "freeze": "freeze"}
"""The equations a listing numbers, and what each is called in the course."""
MAX_ROWS = 160


def listing(jaxpr: Any, names: dict[Any, str], path: Path | None, *, into_kernels: bool = True) -> dict[str, Any]:
    """{"rows", "cut", "scoped"}: each row {"depth", "text", "n", "kind", "line"}; `names` seeds ref names.

    Without `into_kernels`, a `pallas_call` is one row and its kernel is left out (the program around it).
    """
    from jax._src import core  # JAX's jaxpr printer has no public entry for one equation

    state = _State(core.JaxprPpContext(), core.JaxprPpSettings(), path)
    state.into_kernels = into_kernels
    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
    for var, name in names.items():
        state.context.var_names[var] = name
    state.walk(jaxpr, dict(names), 0, None)
    return {"rows": state.rows[:MAX_ROWS], "cut": max(0, len(state.rows) - MAX_ROWS), "scoped": state.scoped,
            "made": state.made}


class _State:
    """One listing being made: the printer's context and the rows so far."""

    def __init__(self, context: Any, settings: Any, path: Path | None) -> None:
        self.context, self.settings, self.path = context, settings, path
        self.rows: list[dict[str, Any]] = []
        self.count = 0
        self.seen: set[int] = set()
        """The inner jaxprs listed so far (by identity), whose names are dropped when one is met again."""
        self.into_kernels = True
        self.scoped: list[str] = []
        """The name of every buffer a `run_scoped` makes, in program order."""
        self.made: list[dict[str, Any]] = []
        """Every ref a `jax.new_ref` makes: its name, line and type."""

    def walk(self, jaxpr: Any, env: dict[Any, str], depth: int, parent_line: int | None) -> None:
        """Add a row per equation of `jaxpr`, nested ones indented under a header row."""

        for eqn in jaxpr.eqns:
            line = learner_line(eqn, self.path) or parent_line
            subs = list(jex.core.jaxprs_in_params(eqn.params))
            if eqn.primitive.name == "pallas_call" and not self.into_kernels:
                self.add(depth, self.header(eqn), None, "kernel", line)
                continue
            if not subs:
                self.event(eqn, depth, line, env)
                continue
            self.add(depth, self.header(eqn), None, None, line)
            for i, sub in enumerate(subs):
                inner = getattr(sub, "jaxpr", sub)
                self.forget(inner)
                nested = sub_env(eqn, inner, env) if env else {}
                if len(inner.invars) == len(eqn.invars):  # a call: its binders read as its operands
                    self.context.suggest_same_var_names(inner.invars, eqn.invars)
                self.name_binders(eqn, inner, nested)
                if len(subs) > 1:
                    self.add(depth + 1, f"{_part(eqn.primitive.name, i)}:", None, None, None)
                self.walk(inner, nested, depth + (2 if len(subs) > 1 else 1), line)

    def forget(self, jaxpr: Any) -> None:
        """Drop the names a jaxpr listed before was given: JAX shares one inner jaxpr between the calls of a
        jitted function, and each call's binders stand for that call's operands, its results are new values."""
        if id(jaxpr) not in self.seen:
            self.seen.add(id(jaxpr))
            return
        for var in [*jaxpr.constvars, *jaxpr.invars]:
            self.context.var_names.pop(var, None)
        for eqn in jaxpr.eqns:  # a nested jaxpr forgets its own names when the walk reaches it
            for var in eqn.outvars:
                self.context.var_names.pop(var, None)

    def event(self, eqn: Any, depth: int, line: int | None, env: dict[Any, str]) -> None:
        """The row of an equation with no body; a state access or DMA gets the next number."""
        from jax._src import core

        kind = EVENTS.get(eqn.primitive.name)
        number, ref, shape = None, None, None
        if kind == "new ref" and eqn.outvars:
            name = _assigned_name(self.path, line) or f"ref{len(self.made) + 1}"
            self.context.var_names.setdefault(eqn.outvars[0], name)
            self.made.append({"name": self.context.var_names[eqn.outvars[0]], "line": line,
                              "type": eqn.outvars[0].aval.str_short(short_dtypes=True)})
        if kind is not None:
            self.count += 1
            number = self.count
            target = eqn.outvars[0] if kind == "new ref" else eqn.invars[0]
            ref = core.pp_var(target, self.context).format()
            if not kind.startswith("DMA"):
                moved = eqn.outvars[0] if kind in ("load", "new ref", "freeze") else None
                value = moved if moved is not None else eqn.invars[min(1, len(eqn.invars) - 1)]
                shape = list(getattr(value.aval, "shape", ()))
        text = core.pp_eqn(eqn, self.context, self.settings).format()
        self.add(depth, text, number, kind, line, ref=ref, shape=shape)

    def name_binders(self, eqn: Any, inner: Any, nested: dict[Any, str]) -> None:
        """Give the nested jaxpr's binders the names of what they stand for (a scoped buffer its own)."""
        for var, name in nested.items():
            self.context.var_names.setdefault(var, name)
        if eqn.primitive.name == "run_scoped":
            given = tuple(getattr(getattr(inner, "debug_info", None), "arg_names", None) or ())
            for i, var in enumerate(inner.invars):
                name = given[i] if i < len(given) and given[i] and given[i].isidentifier() else f"scoped{i}"
                self.context.var_names.setdefault(var, name)
                nested[var] = name
                self.scoped.append(name)

    def header(self, eqn: Any) -> str:
        """`outs = primitive[brief params] ins` for an equation whose body is listed below it."""
        from jax._src import core

        outs = " ".join(core.pp_var(v, self.context).format() + ":" + v.aval.str_short(short_dtypes=True)
                        for v in eqn.outvars)
        ins = " ".join(core.pp_var(v, self.context).format() for v in eqn.invars)
        brief = _brief(eqn)
        text = f"{eqn.primitive.name}[{brief}]" if brief else eqn.primitive.name
        return " ".join(part for part in (f"{outs} =" if outs else "", text, ins) if part)

    def add(self, depth: int, text: str, number: int | None, kind: str | None, line: int | None,
            **more: Any) -> None:
        """One row; a printed equation spanning lines is kept on one."""
        row = {"depth": depth, "text": " ".join(text.split()), "n": number, "kind": kind, "line": line}
        self.rows.append({**row, **{k: v for k, v in more.items() if v is not None}})


def _brief(eqn: Any) -> str:
    """The parameters worth a reader's eye: a jit's name, a scan's length, a shard_map's specs."""
    params, name = eqn.params, eqn.primitive.name
    if name in ("jit", "pjit"):
        return f"name={params.get('name', '')}"
    if name == "scan":
        return f"length={params.get('length')}"
    if name == "shard_map":
        return f"in_specs={params.get('in_specs')} out_specs={params.get('out_specs')}"
    if name == "pallas_call":
        return "kernel"
    return ""


def _part(primitive: str, i: int) -> str:
    """What the i-th body of an equation with several is: a branch, a loop's test or body."""
    if primitive == "cond":
        return f"branch {i}"
    if primitive == "while":
        return ("condition", "body")[i] if i < 2 else f"part {i}"
    return f"part {i}"


_ASSIGNED = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?::[^=]+)?=[^=]")


def _assigned_name(path: Path | None, line: int | None) -> str | None:
    """`acc` for the learner's line `acc = jax.new_ref(...)`: the name they gave a ref they made."""
    if path is None or line is None:
        return None
    match = _ASSIGNED.match(linecache.getline(str(path), line))
    return match.group(1) if match else None
