"""What a program computes, as one short text, and the programs one function ran, kept per input types.

The judge reads programs (jaxprs) and compares values; both must come from what the learner's
function does, whichever way it is asked. A function that looks at its own arguments (`isinstance(x,
jax.core.Tracer)`) or at its stack could run one program when a check traces it and another when a
check calls it. So every program the judge sees of a function, traced or run, is reduced to a
fingerprint, and all the programs one function gives for the same types of input must agree: a
second, different one is the learner's function behaving two ways, and fails the check that met it.

A fingerprint is the sha256 of the program's operations in order, each with its input and output
types and its parameters, nested programs walked into. It leaves out what does not change what a
program computes: how the learner nested their jits (a call of a jitted function is the operations
it calls), the interpreter a kernel is run under (grading forces one), names and source lines, and the
values of literal constants: a Python number baked into the program (a static argument, a counter) makes
the same computation compiled again, which the compile checks judge, not another one.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["STRUCTURAL", "Seen", "fingerprint", "kernels", "maps_shards", "operations", "signature", "structure"]

STRUCTURAL = frozenset({"pallas_call", "shard_map", "scan", "while", "psum", "psum_invariant", "all_gather",
                        "all_gather_invariant", "reduce_scatter", "psum_scatter", "ppermute", "all_to_all", "pmax",
                        "pmin"})
"""What a function's structure is made of, in the course's terms: kernels, per-device programs, the
collectives between devices, and loops. These run as themselves whether the function is traced,
jitted or called op by op (an eager `lax.scan` runs a program holding its scan), unlike a jit's nesting,
a checkpoint or a custom derivative, which an eager call runs through and a trace keeps."""

_CALLS = frozenset({"pjit", "jit", "closed_call", "core_call"})
"""Equations that only call a program: walked into, not written."""
_LEFT_OUT = frozenset({"interpret", "debug", "name", "keep_unused", "inline", "compiler_options_kvs",
                       "in_layouts", "out_layouts", "ctx_mesh", "metadata", "cost_estimate", "source_info"})
"""Parameters that say how or where a program runs, or what it is called, not what it computes."""
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")


def fingerprint(closed: Any) -> str:
    """The sha256 of `closed`'s operations (module docstring)."""
    digest = hashlib.sha256()
    for line in operations(closed):
        digest.update(line.encode())
        digest.update(b"\n")
    return digest.hexdigest()


def operations(closed: Any) -> Iterator[str]:
    """One line per operation of a (closed) jaxpr, each naming its inputs and outputs by number in order of
    appearance, nested programs written in place, calls walked through as the operations they call."""
    names: dict[Any, str] = {}
    jaxpr = getattr(closed, "jaxpr", closed)
    yield "in " + " ".join(_name(v, names) for v in (*jaxpr.constvars, *jaxpr.invars))
    yield from _body(jaxpr, names)
    yield "out " + " ".join(_name(v, names) for v in jaxpr.outvars)


def _name(var: Any, names: dict[Any, str]) -> str:
    """A variable's number (given on first sight, counting distinct numbers only: a call's input is its
    caller's variable under another name), or a literal's value and type."""
    if not hasattr(var, "count") and hasattr(var, "val"):  # a Literal: its type, not its value (module docstring)
        return f"literal:{var.aval}"
    if var not in names:
        names[var] = f"v{len(set(names.values()))}"
    return names[var]


def _body(jaxpr: Any, names: dict[Any, str]) -> Iterator[str]:
    """The operations of `jaxpr`, its variables named in `names` (a call's inputs are its caller's)."""
    import jax.extend as jex

    for eqn in jaxpr.eqns:
        inner = eqn.params.get("jaxpr", eqn.params.get("call_jaxpr"))  # `closed_call` names it `call_jaxpr`
        if eqn.primitive.name in _CALLS and inner is not None:
            callee = getattr(inner, "jaxpr", inner)
            for var, given in zip(callee.invars, eqn.invars, strict=True):
                names[var] = _name(given, names)
            yield from _body(callee, names)
            for var, made in zip(eqn.outvars, callee.outvars, strict=True):
                names[var] = _name(made, names)
            continue
        params = {k: v for k, v in eqn.params.items() if k not in _LEFT_OUT}
        shown = {k: _plain(v) for k, v in sorted(params.items()) if not _holds_jaxpr(v) and k != "grid_mapping"}
        ins = " ".join(_name(v, names) for v in eqn.invars)
        outs = " ".join(f"{_name(v, names)}:{v.aval}" for v in eqn.outvars)
        yield f"{outs} = {eqn.primitive.name} {ins} {shown}"
        if params.get("grid_mapping") is not None:
            yield from _grid(params["grid_mapping"])
        for sub in jex.core.jaxprs_in_params(params):
            yield "{"
            yield from operations(sub)
            yield "}"


def kernels(closed: Any) -> list[str]:
    """The fingerprint of each `pallas_call` a program runs, in order, wherever the learner's jits put it: what a
    kernel computes, whether the call that ran it was traced, jitted or made op by op."""
    import jax.extend as jex

    found: list[str] = []
    for eqn in getattr(closed, "jaxpr", closed).eqns:
        if eqn.primitive.name == "pallas_call":
            digest = hashlib.sha256()
            for line in _body(_Alone(eqn), {}):
                digest.update(line.encode() + b"\n")
            found.append(digest.hexdigest())
            continue
        for sub in jex.core.jaxprs_in_params(eqn.params):
            found.extend(kernels(sub))
    return found


def structure(closed: Any) -> list[str]:
    """The structural operations of a program (`STRUCTURAL`), in order, nested ones included: a kernel by its
    fingerprint, a collective by its axes, a loop by its length, a `shard_map` by its mesh axes."""
    import jax.extend as jex

    found: list[str] = []
    for eqn in getattr(closed, "jaxpr", closed).eqns:
        name = eqn.primitive.name
        if name == "pallas_call":
            found.extend(kernels(_Alone(eqn)))
            continue
        if name in STRUCTURAL:
            found.append(f"{name} {_plain(eqn.params.get('axis_name', eqn.params.get('axes', '')))} "
                         f"{eqn.params.get('length', '')}".rstrip())
        for sub in jex.core.jaxprs_in_params(eqn.params):
            found.extend(structure(sub))
    return found


def maps_shards(parts: list[str]) -> bool:
    """Whether a program whose `structure` is `parts` runs a `shard_map` anywhere in it (the structure is taken
    rather than the program, so that a caller that compares it too walks the program once)."""
    return any(part.startswith("shard_map") for part in parts)


def signature(args: Any, kwargs: Any) -> str:
    """The input types of a call or a trace, as one text: each array (or type) as dtype and shape, anything else
    by its value (a static argument changes the program)."""
    import jax

    parts = []
    for leaf in jax.tree_util.tree_leaves((args, kwargs)):
        shape, dtype = getattr(leaf, "shape", None), getattr(leaf, "dtype", None)
        parts.append(f"{dtype}{list(shape)}" if shape is not None and dtype is not None else repr(leaf)[:200])
    return " ".join(parts)


@dataclass
class _Alone:
    """A jaxpr of one equation, to write that equation alone."""

    eqn: Any

    @property
    def eqns(self) -> list[Any]:
        """The one equation."""
        return [self.eqn]


def _grid(mapping: Any) -> Iterator[str]:
    """A kernel's grid and, per operand, its block and its index map."""
    yield f"grid {tuple(mapping.grid)} index operands {mapping.num_index_operands}"
    for block in mapping.block_mappings:
        yield f"block {_plain(block.block_shape)} of {block.array_aval}"
        yield "{"
        yield from operations(block.index_map_jaxpr)
        yield "}"


def _holds_jaxpr(value: Any) -> bool:
    """Whether a parameter is (or holds) a jaxpr, which is walked instead of printed."""
    import jax.extend as jex

    return bool(list(jex.core.jaxprs_in_params({"p": value})))


def _plain(value: Any) -> str:
    """A parameter as text without memory addresses (a function's repr carries one); a set's members sorted, since
    the order a set of strings prints in changes from one process to the next (string hashes are salted)."""
    if isinstance(value, set | frozenset):
        return f"{type(value).__name__}({sorted(_plain(member) for member in value)})"
    return _ADDRESS.sub("0x", repr(value))[:2000]


@dataclass
class Seen:
    """The fingerprints of the programs each function gave, by the types of its inputs."""

    programs: dict[tuple[str, str], str] = field(default_factory=dict)

    def note(self, function: str, inputs: str, printed: str) -> str | None:
        """Keep `printed` (a fingerprint) for `function` at `inputs`; return the earlier, different fingerprint
        when there was one (the function behaved two ways), None otherwise."""
        key = (function, inputs)
        earlier = self.programs.setdefault(key, printed)
        return earlier if earlier != printed else None
