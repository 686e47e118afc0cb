"""The program a traced jitted call runs, rebuilt as a jit of its own, lowered and compiled alone: what its texts say.

`jit_calls` describes each jitted call a learner's function makes from the trace of that function:
the call's program is rebuilt from its jaxpr with the same donations and shardings
(`rebuilt_call`), lowered at its operands' types (`operand_spec`) and compiled, and its texts read.
A check that traces the same step several times (each call of a warm-up, each donation check)
compiles each distinct program once: `program_facts` keeps what it found, keyed by everything the
program depends on.
"""

from __future__ import annotations

import warnings
from typing import Any

import jax

__all__ = ["NOT_USABLE_WARNING", "operand_spec", "rebuilt_call"]

NOT_USABLE_WARNING = "Some donated buffers were not usable"
_MAX_TEXT = 20_000
"""The most of a program text a `JitCall` keeps: a signature line and a module's first line are far shorter."""
_MAX_PROGRAM = 500_000
"""The most of a whole lowered program a `JitCall` keeps, to tell one call's program from another's."""


def rebuilt_call(eqn: Any) -> Any:
    """The program a traced `jit` equation calls, as a jitted function of its own, with the same
    donations, shardings and kept arguments: what the learner's call compiles, wherever its jit lives."""
    from jax.extend.core import jaxpr_as_fun

    donated = eqn.params["donated_invars"]
    run = jaxpr_as_fun(eqn.params["jaxpr"])
    single = len(eqn.outvars) == 1

    def program(*args: Any) -> Any:
        outs = run(*args)
        return outs[0] if single else tuple(outs)

    # Named as the learner's jit is and returning one array or a tuple as most do, the rebuilt program
    # lowers to the very module of the learner's call, so its compile, kept in the persistent
    # compilation cache, serves this one too (a dict's leaves are named otherwise: compiled again).
    program.__name__ = program.__qualname__ = str(eqn.params.get("name") or "program")
    return jax.jit(
        program,
        donate_argnums=tuple(i for i, d in enumerate(donated) if d),
        in_shardings=tuple(_given(eqn.params.get("in_shardings", ()))) or None,
        out_shardings=_shaped(_given(eqn.params.get("out_shardings", ())), single) or None,
        keep_unused=bool(eqn.params.get("keep_unused", False)),
    )


def _shaped(shardings: list[Any], single: bool) -> Any:
    """The output shardings as the rebuilt program returns its outputs: one, or a tuple."""
    if not shardings:
        return None
    return shardings[0] if single else tuple(shardings)


def _given(shardings: Any) -> list[Any]:
    """The shardings a jit was given, with None where it was given none (JAX then chooses)."""
    return [s if isinstance(s, jax.sharding.Sharding) else None for s in shardings]


def operand_spec(var: Any) -> Any:
    """A `jax.ShapeDtypeStruct` standing for a traced operand, with its sharding when it has one."""
    aval = var.aval
    return jax.ShapeDtypeStruct(aval.shape, aval.dtype, sharding=getattr(aval, "sharding", None))


_FACTS: dict[Any, dict[str, Any]] = {}
_FACTS_KEPT = 32
_CACHED_CONST_ELEMENTS = 1 << 20


def program_facts(eqn: Any) -> dict[str, Any]:
    """What compiling one traced call's program says, once per distinct program: a check that traces the same
    step several times (each call of a warm-up, each donation check) compiles it once."""
    key = _program_key(eqn)
    if key is not None and key in _FACTS:
        return _FACTS[key]
    facts = _compiled_facts(eqn)
    if key is not None:
        if len(_FACTS) >= _FACTS_KEPT:
            _FACTS.pop(next(iter(_FACTS)))
        _FACTS[key] = facts
    return facts


def _program_key(eqn: Any) -> Any:
    """Everything the program of a traced call depends on, or None when its constants are too big to hold
    as a key (then it is compiled every time)."""
    import numpy as np

    closed = eqn.params["jaxpr"]
    consts = getattr(closed, "consts", ())
    if sum(int(np.size(c)) for c in consts) > _CACHED_CONST_ELEMENTS:
        return None
    operands = tuple((v.aval.shape, str(v.aval.dtype), getattr(v.aval, "weak_type", False),
                      str(getattr(v.aval, "sharding", None))) for v in eqn.invars)
    values = (np.asarray(c) for c in consts)
    from course.grading.observe.calls.tpu import active_overrides

    # The name too: the rebuilt program is named after the learner's jit, and its text says so. And the
    # interpreter a grader's block forces: it changes how a `pallas_call` lowers, not the traced call.
    return (str(eqn.params.get("name")), str(active_overrides()), str(closed),
            tuple((v.tobytes(), str(v.dtype)) for v in values),
            tuple(eqn.params["donated_invars"]), str(eqn.params.get("in_shardings")),
            str(eqn.params.get("out_shardings")), bool(eqn.params.get("keep_unused", False)), operands)


def _compiled_facts(eqn: Any) -> dict[str, Any]:
    """Lower and compile the program a traced call runs, with its donation, and read its texts."""
    from course.grading.judge.donors import program_buffers

    donated = tuple(bool(d) for d in eqn.params["donated_invars"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lowered = rebuilt_call(eqn).lower(*(operand_spec(v) for v in eqn.invars))
    texts = [str(w.message).splitlines()[0] for w in caught if NOT_USABLE_WARNING in str(w.message)]
    compiled = lowered.compile()
    header = compiled.as_text().split("\n", 1)[0][:_MAX_TEXT]
    text = lowered.as_text()
    main = next((s for s in text.splitlines() if "@main(" in s), "")[:_MAX_TEXT]
    kept = _kept(lowered, len(donated))
    return {"donated": donated, "alias_bytes": int(getattr(compiled.memory_analysis(), "alias_size_in_bytes", 0) or 0),
            "not_usable": tuple(texts), "out_info": lowered.out_info,
            "reused": tuple(sorted(program_buffers(main, header, donated, kept).aliased)), "lowered": main,
            "compiled": header, "kept": kept, "program": text[:_MAX_PROGRAM]}


def _kept(lowered: Any, count: int) -> tuple[int, ...]:
    """The inputs the lowered program kept as parameters; JAX says so only in its lowering's private
    arguments, so when they are missing every input counts as kept."""
    found = getattr(getattr(lowered, "_lowering", None), "compile_args", {}).get("kept_var_idx")
    return tuple(sorted(found)) if found is not None else tuple(range(count))
