"""The judge running the programs a learner's call ran, on inputs of its own: values from what ran, in this process.

A plain call's answer lists the jitted programs it ran (`course.engine.judge.consistency` reads and keeps them)
and, beside them, where each program's inputs came from and where each leaf of the result did
(`course.engine.executor.runs.fed`). Here those programs become runnable again: each one's equations lose the
executor's source information (the judge's own stands in) and each kernel runs under the strict interpreter. A
grader then runs the chain on fresh inputs the executor never saw (`course.grading.observe.calls.reruns`), so the
values it judges are those the program computes, and nothing the learner's process does after the program ran
reaches them. The executor numbers the programs it sends once per process, and one executor serves one grading (a
fresh fork or process each time), as one judge does.

What the executor says of the sources is its word, but a false word only feeds the judge's own inputs to the
programs another way: a program that computes a wrong result from them still fails.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from course.engine.judge import arguments

__all__ = ["Chain", "Put", "arity", "fits", "keep", "last", "note", "rerun", "run"]

MAX_PROGRAMS = 256
"""A call that ran more programs than this is not run again here (a loop of jitted steps, say)."""


@dataclass(frozen=True)
class Chain:
    """The programs one plain call ran, in order, and where their inputs and the call's result came from."""

    programs: tuple[Any, ...]
    """Each program's closed jaxpr, as the judge read it (JAX's own eager operations among them)."""
    inputs: tuple[tuple[tuple[Any, ...], ...], ...]
    """Per program, per input: ("arg", k), ("out", p, j), ("const", c) or ("other",)."""
    result: tuple[tuple[Any, ...], ...]
    """Per leaf of what the call returned, the same."""
    consts: tuple[Any, ...]
    """The small values the executor sent for ("const", c)."""
    aot: bool = False
    """The call ran an ahead-of-time compiled program (`jit(f).lower(...).compile()`), which has no program to send:
    the chain is empty."""
    places: tuple[Any, ...] | None = None
    """Where each of the call's argument leaves sat in its arguments (`course.engine.judge.arguments`), when known."""

    def source(self, leaf: int) -> tuple[Any, ...]:
        """Where leaf `leaf` of the result came from, ("other",) when it does not exist."""
        return self.result[leaf] if 0 <= leaf < len(self.result) else ("other",)


@dataclass(frozen=True)
class Put:
    """A transfer a call made (`jax.device_put`, `jnp.asarray` of a NumPy value): no program, each input its own
    output, put on the judge's default device here (where a later program runs it, placement changes no value)."""

    count: int


def arity(program: Any) -> tuple[int, int]:
    """How many inputs and outputs a chain's program has."""
    if isinstance(program, Put):
        return program.count, program.count
    return len(program.jaxpr.invars), len(program.jaxpr.outvars)


_LAST: dict[str, Chain | None] = {}
"""Per function, the chain of its last plain call (None when that call sent none this judge could read)."""


def keep(name: str, header: dict[str, Any], returned: list[bytes], rebuilt: Any, at: list[Any]) -> None:
    """In the judge, after a plain call of `name`: keep its chain from the answer's `header`, its constants rebuilt
    by `rebuilt` (as the answer's values are), or None when what came is not one; `at`, where each of the call's
    argument leaves sat (`course.engine.judge.arguments`)."""
    from course.engine.wire import wire

    fed = header.get("fed")
    try:
        consts = wire.decode(fed.get("consts"), returned, rebuilt) if isinstance(fed, dict) else None
    except Exception:  # noqa: BLE001 - constants that cannot be read make no chain
        consts = None
    note(name, fed, consts, returned, at)


def note(name: str, fed: Any, consts: Any, returned: list[bytes], at: list[Any] | None = None) -> None:
    """Keep the chain of `name`'s last plain call from what the executor said of it (`runs.fed`), its constants
    read, and `at`, where its argument leaves sat; None when it is not one."""
    chain = _chain(fed, consts, returned)
    _LAST[name] = chain if chain is None or at is None else replace(chain, places=tuple(at))


def last(name: str) -> Chain | None:
    """The chain of `name`'s last plain call in this grading, or None."""
    return _LAST.get(name)


def _chain(fed: Any, consts: Any, returned: list[bytes]) -> Chain | None:
    """A `Chain` from an answer's parts, or None when they do not make one (each part checked)."""
    if not isinstance(fed, dict) or not isinstance(consts, list):
        return None
    if fed.get("aot") is True:
        return Chain((), (), (), (), aot=True)
    named, inputs, result = fed.get("programs"), fed.get("inputs"), fed.get("result")
    if not (isinstance(named, list) and len(named) <= MAX_PROGRAMS and isinstance(inputs, list)
            and len(inputs) == len(named) and isinstance(result, list)):
        return None
    programs = [_program(node, returned) for node in named]
    if any(p is None for p in programs):
        return None
    checked = []
    for p, (closed, feeds) in enumerate(zip(programs, inputs, strict=True)):
        if not isinstance(feeds, list) or len(feeds) != arity(closed)[0]:
            return None
        checked.append(tuple(_source(s, p, programs, len(consts)) for s in feeds))
    ends = tuple(_source(s, len(programs), programs, len(consts)) for s in result)
    if any(s is None for s in ends) or any(s is None for feeds in checked for s in feeds):
        return None
    return Chain(tuple(programs), tuple(checked), ends, tuple(consts))  # type: ignore[arg-type]


def _program(node: Any, returned: list[bytes]) -> Any:
    """A chain's program: one sent with this answer, read here and kept by the number the executor gave it, or
    one sent before under that number."""
    if not (isinstance(node, list) and node and all(type(v) is int for v in node[1:])):
        return None
    if node[0] == "put" and len(node) == 2 and 0 < node[1] <= 4096:
        return Put(node[1])
    if node[0] == "seen" and len(node) == 2:
        return _KNOWN.get(node[1])
    if node[0] == "sent" and len(node) == 3 and 0 <= node[1] < len(returned) and node[2] not in _KNOWN:
        from course.engine.wire.jaxpr_objects import decode

        try:
            _KNOWN[node[2]] = decode(returned[node[1]])
        except Exception:  # noqa: BLE001 - a program that cannot be read makes no chain
            return None
        return _KNOWN[node[2]]
    return None


_KNOWN: dict[int, Any] = {}
"""The programs chains sent, by the executor's number for each."""


def _source(node: Any, before: int, programs: list[Any], consts: int) -> tuple[Any, ...] | None:
    """One source, if it is well formed and names an earlier program's output or a constant that exists."""
    if not isinstance(node, list) or not node or not all(type(v) in (str, int) for v in node):
        return None
    kind = node[0]
    if kind == "other" and len(node) == 1:
        return ("other",)
    if kind == "arg" and len(node) == 2 and type(node[1]) is int and node[1] >= 0:
        return ("arg", node[1])
    if kind == "const" and len(node) == 2 and type(node[1]) is int and 0 <= node[1] < consts:
        return ("const", node[1])
    if (kind == "out" and len(node) == 3 and type(node[1]) is int and 0 <= node[1] < before
            and type(node[2]) is int and 0 <= node[2] < arity(programs[node[1]])[1]):
        return ("out", node[1], node[2])
    return None


def rerun(key: str, name: str, leaves: list[Any], at: list[Any]) -> tuple[bool, int, list[tuple[Any, Any]]] | None:
    """The chain of the last plain call kept under `key` (of the learner's `name`), run on `leaves` (which sit at
    `at` in their arguments, put in the order the call had its own): whether it ran an ahead-of-time compiled
    program, how many programs it ran, and per leaf of its result (where it came from, the value computed here or
    None); None when no chain can be run, or `leaves` are not of its types. Programs that fail to run here fail the
    check: they are what the learner's process sent."""
    chain = last(key)
    ordered = None if chain is None else arguments.arranged(
        leaves, at, None if chain.places is None else list(chain.places))
    if chain is None or ordered is None or not fits(chain, ordered):
        return None
    try:
        values = run(chain, ordered)
    except Exception as exc:  # noqa: BLE001 - whatever failed, the programs came from the learner's process
        from course.engine.common.submission import describe_exception
        from course.grading.feedback import fail

        fail(f"the grader could not run the programs your call of `{name}` ran on inputs of its own: "
             f"{describe_exception(exc)[:300]}. Something in your file changed what it sends, or a program of yours "
             "needs more than its inputs (a callback into your Python, say)")
    return chain.aot, len(chain.programs), list(zip(chain.result, values, strict=True))


def fits(chain: Chain, leaves: list[Any]) -> bool:
    """Whether `leaves` can stand for the call's arguments: each one a program takes is an array of the type the
    program takes there."""
    import jax
    import numpy as np

    for closed, feeds in zip(chain.programs, chain.inputs, strict=True):
        if isinstance(closed, Put):  # takes any array: what it feeds checks its types
            continue
        for var, source in zip(closed.jaxpr.invars, feeds, strict=True):
            if source[0] != "arg":
                continue
            if source[1] >= len(leaves):
                return False
            given, wanted = leaves[source[1]], var.aval
            if _number(given) and wanted.shape == ():
                continue  # a Python or NumPy number the call passed, as jit takes it: cast to the program's type
            if not isinstance(given, jax.Array | np.ndarray):
                return False
            if (tuple(given.shape), np.dtype(given.dtype)) != (tuple(wanted.shape), np.dtype(wanted.dtype)):
                return False
    return True


def run(chain: Chain, leaves: list[Any]) -> list[Any]:
    """Run the chain's programs here on the call's argument leaves `leaves` (fresh ones of the same types): per
    leaf of the call's result, the value the programs computed (an argument or constant returned as it is, itself),
    or None for a leaf made outside them. A program fed by something made outside the programs is not run, and what
    depends on it is None too, unless the program never reads that input (zeros stand in for it)."""
    outs: list[list[Any] | None] = []
    for closed, feeds in zip(chain.programs, chain.inputs, strict=True):
        values = [_fed(source, leaves, outs, chain.consts) for source in feeds]
        values = [_unused(closed, i) if v is None else _typed(closed, i, v) for i, v in enumerate(values)]
        if any(v is None for v in values):
            outs.append(None)
            continue
        outs.append([_put(v) for v in values] if isinstance(closed, Put) else list(_runnable(closed)(*values)))
    return [_fed(source, leaves, outs, chain.consts) for source in chain.result]


def _typed(closed: Any, index: int, value: Any) -> Any:
    """`value` for input `index` of `closed`: a Python or NumPy number cast to the type the program takes there, as
    `jax.jit` casts a number passed to it; anything else as it is."""
    import numpy as np

    if isinstance(closed, Put) or not _number(value):
        return value
    return np.asarray(value, closed.jaxpr.invars[index].aval.dtype)


def _number(value: Any) -> bool:
    """Whether `value` is a Python or NumPy number, which `jax.jit` casts to the type its program takes."""
    import numpy as np

    return isinstance(value, bool | int | float | np.generic)


def _put(value: Any) -> Any:
    """A value put on this process's default device, as a transfer does."""
    import jax

    return jax.device_put(value)


def _unused(closed: Any, index: int) -> Any:
    """Zeros of the type of input `index` of `closed` when the program never reads that input, else None."""
    from jax._src import core

    if isinstance(closed, Put):
        return None
    var = closed.jaxpr.invars[index]
    read = any(v is var for eqn in closed.jaxpr.eqns for v in eqn.invars if isinstance(v, core.Var))
    if read or any(v is var for v in closed.jaxpr.outvars if isinstance(v, core.Var)):
        return None
    import numpy as np

    return np.zeros(var.aval.shape, var.aval.dtype)


def _fed(source: tuple[Any, ...], leaves: list[Any], outs: list[list[Any] | None], consts: tuple[Any, ...]) -> Any:
    """The value a source names, here, or None."""
    if source[0] == "arg":
        return leaves[source[1]] if source[1] < len(leaves) else None
    if source[0] == "const":
        return consts[source[1]]
    if source[0] == "out":
        made = outs[source[1]] if source[1] < len(outs) else None
        return None if made is None else made[source[2]]
    return None


_RUNNABLE: dict[int, Any] = {}
"""Per program read (by identity: the judge keeps each program once), its runnable `jax.jit`."""


def _runnable(closed: Any) -> Any:
    """`closed` as a `jax.jit` this process can run: the executor's source information dropped, every kernel under
    the strict interpreter."""
    if id(closed) not in _RUNNABLE:
        import jax
        from jax._src import core

        _RUNNABLE[id(closed)] = (closed, jax.jit(core.jaxpr_as_fun(_rebuilt(closed, {}))))
    return _RUNNABLE[id(closed)][1]


def _rebuilt(closed: Any, memo: dict[int, Any]) -> Any:
    """A copy of a closed jaxpr with the judge's own source information on every equation, at every depth."""
    from jax._src import core

    return core.ClosedJaxpr(_jaxpr(closed.jaxpr, memo), closed.consts)


def _jaxpr(jaxpr: Any, memo: dict[int, Any]) -> Any:
    """`_rebuilt` of one open jaxpr, each shared one rebuilt once."""
    from jax._src import source_info_util

    if id(jaxpr) not in memo:
        eqns = [eqn.replace(source_info=source_info_util.new_source_info(),
                            params=_params(eqn.primitive.name, eqn.params, memo))
                for eqn in map(_called, jaxpr.eqns)]
        memo[id(jaxpr)] = (jaxpr, jaxpr.replace(eqns=eqns))
    return memo[id(jaxpr)][1]


_CUSTOM = frozenset({"custom_jvp_call", "custom_vjp_call"})
"""Primitives whose derivative rules are Python functions, which cross as their names only."""


def _called(eqn: Any) -> Any:
    """An equation as it runs forward: a custom derivative's call becomes a plain call of its function's jaxpr (its
    rules, functions of the learner's process, never run forward and never crossed)."""
    from jax._src import core

    if eqn.primitive.name not in _CUSTOM or not isinstance(eqn.params.get("call_jaxpr"), core.ClosedJaxpr):
        return eqn
    return eqn.replace(primitive=core.closed_call_p, params={"call_jaxpr": eqn.params["call_jaxpr"]})


def _params(primitive: str, params: dict[str, Any], memo: dict[int, Any]) -> dict[str, Any]:
    """An equation's parameters with their jaxprs rebuilt, and a kernel's interpreter the judge's strict one."""
    rebuilt = {key: _param(value, memo) for key, value in params.items()}
    if primitive == "pallas_call":
        from course.grading.observe.calls.tpu import strict_params

        rebuilt["interpret"] = strict_params()
    return rebuilt


def _param(value: Any, memo: dict[int, Any]) -> Any:
    """One parameter, its jaxprs rebuilt (inside tuples and lists too)."""
    from jax._src import core

    if isinstance(value, core.ClosedJaxpr):
        return _rebuilt(value, memo)
    if isinstance(value, core.Jaxpr):
        return _jaxpr(value, memo)
    if isinstance(value, tuple | list) and any(isinstance(v, core.ClosedJaxpr | core.Jaxpr) for v in value):
        return type(value)(_param(v, memo) for v in value)
    return value
