"""Values from the programs that ran: the judge runs the jitted programs a learner's call ran on fresh inputs.

A check compares what the learner's function returned; with `rerun`, it also judges what the programs that call
ran compute when the judge runs them itself, on inputs the process running the learner's code never saw
(`course.engine.judge.replay`). A result made outside those programs (by NumPy, say, while a jitted program ran
beside it for its donation) is told as such.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax

__all__ = ["Rerun", "called_programs", "rerun"]


@dataclass(frozen=True)
class Rerun:
    """The programs of one call run again on fresh inputs: per leaf of that call's result, where it came from
    (("out", program, output), ("arg", k), ("const", c) or ("other",)) and the value the programs computed for
    it (an argument or constant returned as it is, itself; None for a leaf made outside them)."""

    sources: tuple[tuple[Any, ...], ...]
    values: tuple[Any, ...]
    programs: int = 0
    """How many programs the call ran (JAX's own eager operations among them)."""
    aot: bool = False
    """The call ran an ahead-of-time compiled program (`jit(f).lower(...).compile()`): JAX keeps no program of it
    to run again, so nothing was run (its checks of donation and compiles say so)."""

    @property
    def ran_programs(self) -> bool:
        """Whether the call ran any program at all (a jitted one of the learner's, or an eager operation)."""
        return self.programs > 0

    def computed(self, leaf: int = 0) -> Any:
        """The value the programs computed for result leaf `leaf`, or None when no program made it."""
        return self.values[leaf] if 0 <= leaf < len(self.values) else None


def rerun(fn: Callable[..., Any], *args: Any) -> Rerun | None:
    """The programs the last plain call of `fn` ran, run again on `args`: fresh inputs of that call's types.

    In the judge they run there, never in the learner's process; None when that call sent nothing that can be run
    (or `args` are not of its types). In a grading in one process, the function itself is called on `args` and its
    result leaves count as what its programs computed."""
    remote = getattr(fn, "rerun", None)
    if remote is not None:
        got = remote(*args)
        if got is None:
            return None
        aot, programs, pairs = got
        return Rerun(tuple(source for source, _ in pairs), tuple(value for _, value in pairs), programs, aot)
    return _in_one_process(fn, args)


def _in_one_process(fn: Callable[..., Any], args: tuple[Any, ...]) -> Rerun | None:
    """`rerun` where the learner's code runs in this process: call it, and read where its result came from."""
    from course.engine.executor.runs import fed

    result, ran = _recorded(fn, args)
    chain = fed(ran, jax.tree_util.tree_leaves(list(args)), result, [])
    if chain is None:
        return None
    sources = [tuple(s) for s in chain["result"]]
    values = [None if s[0] == "other" else leaf for s, leaf in zip(sources, jax.tree_util.tree_leaves(result),
                                                                    strict=True)]
    return Rerun(tuple(sources), tuple(values), len(chain["programs"]), chain.get("aot") is True)


def called_programs(fn: Callable[..., Any], *args: Any) -> tuple[Any, list[Any] | None]:
    """Call `fn(*args)` as a learner calls it: what it returned, and every program the call ran (its jits, and JAX's
    own programs of its eager operations), in order, as closed jaxprs; None for the programs when the call sent none
    that can be read (an ahead-of-time compiled one among them, or more than `runs.MAX_CHAIN`).

    In the judge the programs are those the call's own answer carried (`course.engine.judge.replay`), so what a check
    reads of them is what that call ran, held like every plain call to the function's other plain calls."""
    programs = getattr(fn, "ran_programs", None)
    if programs is not None:  # the learner's function seen from the judge
        result = fn(*args)
        return result, programs()
    result, ran = _recorded(fn, args)
    if any(run.program is None and not run.helper for run in ran):
        return result, None
    return result, [run.program for run in ran if run.program is not None]


def _recorded(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[Any, list[Any]]:
    """`fn(*args)` called in this process, finished, with every run it made (programs kept)."""
    from course.grading.observe.calls.executions import record_runs

    with record_runs(programs=True) as ran:
        result = jax.block_until_ready(fn(*args))
    return result, ran.runs
