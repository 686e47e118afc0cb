"""Whether a function is jitted once: what its later calls, with the same arguments, compile and build.

"Jitted once at module scope" is a rule about what calls do, not about how the file spells it: a
function held in a dict or built by a factory at import is as good as a decorator. What breaks
the rule shows in the calls. A function that is not jitted runs op by op, and its `lax.scan`,
`jax.checkpoint` or `value_and_grad` are traced and compiled anew on every call; one that calls
`jax.jit(f)(...)` inside itself builds a new wrapper, and compiles, each time. `later_calls(fn,
args)` makes one warm-up call, then counts every backend compile (JAX's own eager ones included:
they are what an unjitted function runs) and every jitted wrapper the learner's file builds
during the calls after it, and records the compiled programs the last call ran: a jitted
function runs one, an unjitted one a program per operation (`jit(dot)`, `jit(add)`, ...), even
when each of them was compiled before.

In a judge's check, where `fn` is the learner's function seen from afar, the executor makes the
calls (`watched_calls`) and reports what only it can see: the compiles, the wrappers built, the
programs run. The judge weighs the report against the programs' texts, which are those the calls
ran: a later call that runs a program no earlier call ran compiled it, whatever was reported, and a
function whose calls ran no jitted program of the learner's runs op by op.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax

from course.grading.observe.calls.compiles import CompileRecorder
from course.grading.observe.calls.executions import record_runs
from course.grading.observe.calls.patching import count_jit_builds
from course.grading.observe.calls.strict_runs import runs_here

__all__ = ["LaterCalls", "later_calls"]


@dataclass(frozen=True)
class LaterCalls:
    """What the calls after a warm-up call compiled and built."""

    calls: int  # the calls counted, after the warm-up
    compiles: tuple[str, ...]  # the name of each program compiled during them
    builds: int  # jitted wrappers the learner's file built during them
    programs: tuple[str, ...] = ()  # the compiled programs the last call ran, in order
    unjitted: bool = False  # the calls ran no jitted program of the learner's: every operation runs as its own

    @property
    def once(self) -> bool:
        """Whether the later calls reused what the first one made: no compile, no new wrapper."""
        return not self.compiles and not self.builds

    @property
    def jitted(self) -> bool:
        """Whether the function is jitted once: reused as `once` says, and a call runs one compiled program."""
        return self.once and len(self.programs) <= 1 and not self.unjitted

    def message(self, name: str) -> str:
        """A sentence saying what the later calls did, naming the function."""
        shown = ", ".join(sorted(set(self.compiles))[:4]) + (" and more" if len(set(self.compiles)) > 4 else "")
        did = []
        if self.compiles:
            did.append(f"compiled {len(self.compiles)} program(s) ({shown})")
        if self.builds:
            did.append(f"built {self.builds} new jitted wrapper(s)")
        if not did and len(self.programs) <= 1:
            return (f"`{name}` runs no jitted program: its calls ran no `jax.jit` of yours, so each operation is "
                    f"dispatched as a program of its own and XLA never sees the step whole to fuse it. Jit `{name}` "
                    f"once, at module scope (`{name} = jax.jit(...)` or `@jax.jit`), so a call runs one compiled "
                    "program.")
        if not did:
            ran = ", ".join(list(dict.fromkeys(self.programs))[:4])
            return (f"one call of `{name}` ran {len(self.programs)} compiled programs ({ran} ...): it runs op by op, "
                    "each operation dispatched as a program of its own, so XLA never sees the step whole to fuse "
                    f"it. Jit `{name}` once, at module scope (`{name} = jax.jit(...)` or `@jax.jit`), so a call "
                    "runs one compiled program.")
        return (f"after a first call of `{name}`, {self.calls} more call(s) with the same arguments "
                f"{' and '.join(did)}: "
                "a function that is not jitted runs op by op and traces and compiles its scan, checkpoint and "
                "gradient again on every call, and a `jax.jit` made inside the call is a new function each time. "
                f"Jit `{name}` once, at module scope (`{name} = jax.jit(...)` or `@jax.jit`), so later calls "
                "reuse its compiled program.")


def later_calls(fn: Callable[..., Any], args: Sequence[Any] | Callable[[], Sequence[Any]], *, calls: int = 2,
                path: Path | str | None = None, module: types.ModuleType | None = None) -> LaterCalls:
    """Call `fn(*args)` once, then `calls` more times, counting compiles and wrappers built in the later calls.

    `args` may be a function that makes fresh arguments for each call (for a function that donates). A judge's
    check passes the learner's `module` too: the executor makes the calls, and the judge weighs its report.
    """
    make = args if callable(args) else (lambda: args)
    if not runs_here(fn):
        return _judged(fn, [tuple(make()) for _ in range(calls + 1)], module, path)
    jax.block_until_ready(fn(*make()))
    with CompileRecorder() as rec, count_jit_builds(path) as built:
        for _ in range(calls - 1):
            jax.block_until_ready(fn(*make()))
        args_last = make()
        with record_runs() as runs:
            jax.block_until_ready(fn(*args_last))
    return LaterCalls(calls=calls, compiles=tuple(e.fun_name for e in rec.events), builds=built[0],
                      programs=tuple(runs.fun_names()))


def _judged(fn: Any, calls: list[tuple[Any, ...]], module: types.ModuleType | None,
            path: Path | str | None) -> LaterCalls:
    """`later_calls` of the learner's function seen from the judge: the executor's report of the calls, weighed
    here against the texts of the programs they ran (`warmup.after_warmup`)."""
    from course.grading.observe.calls.warmup import after_warmup, watched_calls

    if module is None:
        raise ValueError("later_calls in a judge's check needs the learner's module")
    watched = watched_calls(fn, calls, module=module, path=Path(path) if path else None, every_program=True)
    later = after_warmup(watched)
    unseen = ("a program no earlier call ran, though no compile was reported",) * len(later.unreported)
    return LaterCalls(calls=len(calls) - 1, compiles=later.compiled or unseen, builds=later.built,
                      programs=tuple(name for name, _ in watched[-1].ran), unjitted=not later.ran_jit)
