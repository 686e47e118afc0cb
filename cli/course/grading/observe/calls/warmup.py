"""Calls of a step after its warm-up: what each compiled and built, and the programs it ran, read from their texts.

"No compile after warm-up" rests on two kinds of evidence. The compile events and the jax.jit
wrappers built during each call can only be reported by the process that ran the call. The
programs each call ran are kept as the call runs them (`RunRecorder(programs=True)`), and read
from their texts (`runs_as_jit_calls`): a call whose program differs from every earlier call's
needed a compile, whatever was reported. Both come from the very calls watched, never from a
trace made beside them, so a function cannot show one program to a trace and run another. In a
judge check, `watched_calls` asks the executor to make the calls and send both, and the judge
checks the report against the texts (`unreported_compiles`).
"""

from __future__ import annotations

import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax

from course.grading.feedback import fail
from course.grading.observe.calls.compiles import CompileRecorder, own_function_names
from course.grading.observe.calls.donation import JitCall, judged, record_of, runs_as_jit_calls
from course.grading.observe.calls.executions import RunRecorder
from course.grading.observe.calls.patching import count_jit_builds

__all__ = ["AfterWarmup", "WatchedCall", "after_warmup", "unreported_compiles", "watched_calls"]


@dataclass(frozen=True)
class WatchedCall:
    """One call of a step: what it compiled and built (reported where it ran), and the jitted programs it runs."""

    compiled: tuple[str, ...]
    """Compiles of the learner's own functions during the call (`jit(sgd_step)`)."""
    built: int
    """jax.jit wrappers the learner's file built during the call."""
    programs: tuple[JitCall, ...]
    """The jitted programs of the learner's the call ran, with their texts."""
    traced: bool = True
    """False when a program the call ran has no text to read (an ahead-of-time `Compiled`): then its programs
    are unknown, and none is listed."""
    ran: tuple[tuple[str, tuple[tuple[int, ...], ...]], ...] = ()
    """With `runs`: each program of the learner's the call ran and its arguments' shapes, as the process that
    ran it recorded them (reported, not read from a text: the evidence for a call that cannot be traced)."""


def watched_calls(fn: Callable[..., Any], calls: Sequence[tuple[Any, ...]], *, module: types.ModuleType,
                  path: Path | None = None, fresh_caches: bool = False, runs: bool = False,
                  every_program: bool = False) -> list[WatchedCall]:
    """Call `fn(*args)` for each tuple of `calls`, in order, recording each call's compiles (of `module`'s own
    functions, and of any jitted function called from the file at `path`), the jits built by that file, and
    the programs the call ran, with their texts. The learner's function seen
    from the judge makes the calls in the executor, which knows its own module and file and sends the
    programs' texts for the judge to read. With `fresh_caches`, JAX's caches are emptied there first, so
    that the first call of each program compiles it even when it wraps a function of JAX's own
    (`jax.jit(jnp.add)`), whose programs earlier checks compiled whatever module held the wrapper. With
    `runs`, the programs each call ran are recorded there too, with their arguments' shapes (`WatchedCall.ran`);
    with `every_program`, JAX's own programs among them and among the compiles (`jit(convert_element_type)`: an
    operation run eagerly)."""
    asked = {"fresh_caches": fresh_caches, "runs": runs, "every_program": every_program}
    remote = getattr(fn, "watched_calls", None)
    if remote is not None:
        return _judged(remote([list(args) for args in calls], **asked), len(calls))
    return _judged(watch(fn, calls, module=module, path=path, **asked), len(calls))


def watch(fn: Callable[..., Any], calls: Sequence[tuple[Any, ...]], *, module: types.ModuleType | None,
          path: Path | None, fresh_caches: bool = False, runs: bool = False,
          every_program: bool = False) -> list[dict[str, Any]]:
    """What the executor sends for `watched_calls`: per call, its compiles, its builds and its programs."""
    if module is None:
        raise ValueError("watched_calls needs the learner's module, to know which compiles are theirs")
    names = own_function_names(module)
    if fresh_caches:
        jax.clear_caches()
    records: list[dict[str, Any]] = []
    with count_jit_builds(path) as builds:
        for args in calls:
            before = builds[0]
            inputs = jax.tree_util.tree_leaves(args)  # before the call consumes any of them
            # By name, and by the file on the stack: a jit of JAX's own function made lazily (in a factory's
            # cache) is called from the learner's file, though its name is not one of the file's. With
            # `every_program`, JAX's own too: an eager scan compiles its body again on every call.
            with CompileRecorder(**_own(names, path, every_program)) as rec, \
                    RunRecorder(programs=True) as ran:
                _settled(fn(*args))
            records.append({"compiled": list(rec.fun_names()), "built": builds[0] - before})
            if runs or every_program:
                kept = ran.runs if every_program else [r for r in ran.runs if not r.helper and _named(r, names)]
                records[-1]["ran"] = [[r.fun_name, [list(shape) for shape in r.shapes]] for r in kept]
            records[-1]["programs"] = [record_of(c) for c in runs_as_jit_calls(ran.runs, inputs, path)]
            records[-1]["traced"] = all(r.program is not None for r in ran.runs if not r.helper)
            if not records[-1]["traced"]:
                records[-1]["programs"] = []
    return records


def _named(run: Any, names: set[str]) -> bool:
    """Whether a program run is one of the learner's functions by name (`jit(step)` for `step`)."""
    from course.grading.observe.calls.compiles import matches_name

    return matches_name(run.fun_name, frozenset(names))


def _own(names: set[str], path: Path | None, every_program: bool) -> dict[str, Any]:
    """A compile recorder's filter: the file's own functions and what runs from the file, or everything."""
    if every_program:
        return {"names": None, "path": None}
    return {"names": names, "path": str(path) if path is not None else None}


def _settled(out: Any) -> None:
    """Wait for a call's results; one it returned already deleted (a donated argument handed back) is left
    to the checks about donation, not made an error of this one's."""
    leaves = jax.tree_util.tree_leaves(out)
    jax.block_until_ready([x for x in leaves if not (isinstance(x, jax.Array) and x.is_deleted())])


def _judged(records: Any, count: int) -> list[WatchedCall]:
    """The calls as the executor described them, their programs read here; malformed records fail the check."""
    if not isinstance(records, list) or len(records) != count or not all(_is_record(r) for r in records):
        fail("the description of your step's calls came back malformed, which no call of `jax.jit` makes.")
    return [WatchedCall(compiled=tuple(r["compiled"]), built=r["built"], programs=tuple(judged(r["programs"])),
                        traced=r["traced"], ran=tuple((n, tuple(map(tuple, shapes))) for n, shapes in r.get("ran", [])))
            for r in records]


def _is_record(r: Any) -> bool:
    """Whether `r` has the fields and types `watch` gives (its programs are checked by `judged`)."""
    return (isinstance(r, dict) and isinstance(r.get("compiled"), list)
            and all(isinstance(n, str) for n in r["compiled"]) and type(r.get("built")) is int and r["built"] >= 0
            and isinstance(r.get("programs"), list) and type(r.get("traced")) is bool
            and (r["traced"] or not r["programs"]) and _is_ran(r.get("ran", [])))


def _is_ran(ran: Any) -> bool:
    """Whether `ran` lists programs as `watch` records them: a name and its arguments' shapes."""
    return isinstance(ran, list) and all(
        isinstance(r, list) and len(r) == 2 and isinstance(r[0], str) and isinstance(r[1], list)
        and all(isinstance(shape, list) and all(type(d) is int and d >= 0 for d in shape) for shape in r[1])
        for r in ran)


def unreported_compiles(watched: Sequence[WatchedCall]) -> list[int]:
    """The calls (by index) that run a program no earlier call ran, yet were reported to compile nothing:
    a new program needs a compile, so such a report is not what the calls did. A call that could not be
    traced tells nothing either way."""
    seen: set[str] = set()
    missing = []
    for i, call in enumerate(watched):
        texts = {p.program for p in call.programs if p.program}
        if i and texts - seen and not call.compiled:
            missing.append(i)
        seen |= texts
    return missing


@dataclass(frozen=True)
class AfterWarmup:
    """What the calls after the first (the warm-up) did, for a "compiles once" check to word."""

    compiled: tuple[str, ...]
    """The compiles reported, in order (`jit(step)` once per compile)."""
    built: int
    """jax.jit wrappers built."""
    unreported: tuple[int, ...]
    """Calls that ran a program no earlier call ran, though no compile was reported for them."""
    ran_jit: bool
    """Whether any call runs a jitted program of the learner's (or could not be traced to tell)."""

    @property
    def compiles(self) -> int:
        """How many compiles the later calls made, at the least."""
        return len(self.compiled) or len(self.unreported)

    @property
    def names(self) -> str:
        """What compiled, in words."""
        return ", ".join(dict.fromkeys(self.compiled)) or "a program no earlier call ran, though none was reported"


def after_warmup(watched: Sequence[WatchedCall]) -> AfterWarmup:
    """The calls after the first of `watched`: their compiles, reported and read from the programs, and builds."""
    later = watched[1:]
    return AfterWarmup(compiled=tuple(n for w in later for n in w.compiled), built=sum(w.built for w in later),
                       unreported=tuple(unreported_compiles(watched)),
                       ran_jit=any(w.programs for w in watched) or not all(w.traced for w in watched))
