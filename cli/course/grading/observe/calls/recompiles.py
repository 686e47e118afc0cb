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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax

from course.grading.observe.calls.compiles import CompileRecorder
from course.grading.observe.calls.executions import record_runs
from course.grading.observe.calls.patching import count_jit_builds

__all__ = ["LaterCalls", "later_calls"]


@dataclass(frozen=True)
class LaterCalls:
    """What the calls after a warm-up call compiled and built."""

    calls: int  # the calls counted, after the warm-up
    compiles: tuple[str, ...]  # the name of each program compiled during them
    builds: int  # jitted wrappers the learner's file built during them
    programs: tuple[str, ...] = ()  # the compiled programs the last call ran, in order

    @property
    def once(self) -> bool:
        """Whether the later calls reused what the first one made: no compile, no new wrapper."""
        return not self.compiles and not self.builds

    @property
    def jitted(self) -> bool:
        """Whether the function is jitted once: reused as `once` says, and a call runs one compiled program."""
        return self.once and len(self.programs) <= 1

    def message(self, name: str) -> str:
        """A sentence saying what the later calls did, naming the function."""
        shown = ", ".join(sorted(set(self.compiles))[:4]) + (" and more" if len(set(self.compiles)) > 4 else "")
        did = []
        if self.compiles:
            did.append(f"compiled {len(self.compiles)} program(s) ({shown})")
        if self.builds:
            did.append(f"built {self.builds} new jitted wrapper(s)")
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
                path: Path | str | None = None) -> LaterCalls:
    """Call `fn(*args)` once, then `calls` more times, counting compiles and wrappers built in the later calls.

    `args` may be a function that makes fresh arguments for each call (for a function that donates).
    """
    make = args if callable(args) else (lambda: args)
    jax.block_until_ready(fn(*make()))
    with CompileRecorder() as rec, count_jit_builds(path) as built:
        for _ in range(calls - 1):
            jax.block_until_ready(fn(*make()))
        args_last = make()
        with record_runs() as runs:
            jax.block_until_ready(fn(*args_last))
    return LaterCalls(calls=calls, compiles=tuple(e.fun_name for e in rec.events), builds=built[0],
                      programs=tuple(runs.fun_names()))
