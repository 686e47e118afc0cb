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

from course.grading.feedback import fail

__all__ = ["Rerun", "called_programs", "program_values", "rerun"]


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
    (or `args` are not of its types). In a grading in one process, the function itself is called on `args` and the
    programs it ran are run again on copies of them, as the judge would run them."""
    remote = getattr(fn, "rerun", None)
    if remote is not None:
        got = remote(*args)
        if got is None:
            return None
        aot, programs, pairs = got
        return Rerun(tuple(source for source, _ in pairs), tuple(value for _, value in pairs), programs, aot)
    return _in_one_process(fn, args)


def program_values(fn: Callable[..., Any], *args: Any, made_outside: str, needed: int = 1, count: int | None = None,
                   skip_without_programs: bool = True) -> tuple[Any, ...] | None:
    """What the programs of the last plain call of `fn` compute on the fresh `args`, one value per result leaf.

    None when that call ran an ahead-of-time compiled program (JAX keeps none to run again), or, with
    `skip_without_programs`, no program at all: the checks of the exercise's jit, donation or compiles judge those.
    Fails with `made_outside` when the result has not `count` leaves (when given), or when any of its first
    `needed` leaves was not made by the programs (a NumPy result handed back beside them, a copy through the host),
    or when the call sent nothing that can be run again."""
    again = rerun(fn, *args)
    if again is not None and (again.aot or (skip_without_programs and not again.ran_programs)):
        return None
    if (again is None or (count is not None and len(again.values) != count)
            or any(again.computed(i) is None for i in range(needed))):
        fail(made_outside)
    return again.values


def _in_one_process(fn: Callable[..., Any], args: tuple[Any, ...]) -> Rerun | None:
    """`rerun` where the learner's code runs in this process: call it, then run the programs it ran again on the same
    `args`, as the judge runs them (`course.engine.judge.replay`), so that a leaf computed from something made
    outside them (a copy through the host) is told as the judge tells it."""
    from course.engine.executor.runs import chained, fed
    from course.engine.judge.replay import Chain, Put, run

    leaves = jax.tree_util.tree_leaves(list(args))
    spare = [leaf.copy() if isinstance(leaf, jax.Array) else leaf for leaf in leaves]  # the call may donate them
    result, ran = _recorded(fn, args)
    told = fed(ran, leaves, result, [])
    if told is None:
        return None
    if told.get("aot") is True:
        return Rerun((), (), 0, aot=True)
    programs = tuple(Put(len(r.args)) if r.program is None else r.program for r in chained(ran))
    chain = Chain(programs, tuple(tuple(tuple(s) for s in feeds) for feeds in told["inputs"]),
                  tuple(tuple(s) for s in told["result"]), tuple(told["consts"]))
    return Rerun(chain.result, tuple(run(chain, spare)), len(programs))


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
