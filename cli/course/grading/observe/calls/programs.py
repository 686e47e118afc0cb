"""A learner's function compiled once at stated shapes: run it, and read what XLA says it costs.

`compile_program(fn, *args)` traces, lowers and compiles `jax.jit(fn)` for those arguments once
and returns a `Program`: calling it runs that very executable (values and costs come from one
compile), `memory` holds `memory_analysis()` as numbers a message can quote, `hlo_size` counts the
instructions of the optimized HLO and `flops` is `cost_analysis()`'s figure. Programs are kept by
the text of their lowered module, so two checks that compile the same program share one compile.

What these numbers mean on XLA CPU (JAX 0.10.2): `temp` (buffers live inside the program) is what
separates a scan from unrolled code and one checkpoint policy from another; `peak_memory_in_bytes`
is arguments plus outputs and leaves temp out; `generated_code_size_in_bytes` and the host fields
are 0; `cost_analysis()` counts a loop body once, whatever its trip count (use
`course.grading.observe.traces.matmuls` for work); the HLO text is the program's size.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import jax

__all__ = ["Memory", "Program", "call_jitted", "compile_lowered", "compile_program", "compile_trace", "grad_of_sum",
           "hlo_size", "mib", "over_budget", "size_text", "under_jit"]

# One instruction of HLO text: `  %add.3 = f32[8]{0} add(...)` or `  ROOT %tuple = (...) tuple(...)`.
_INSTRUCTION = re.compile(r"^\s+(?:ROOT\s+)?%?[\w.\-]+\s=\s", re.MULTILINE)
_KEEP = 8  # programs kept in the process: a grading compiles a handful, an inspection a few more
_programs: OrderedDict[tuple[str, str], Any] = OrderedDict()


@dataclass(frozen=True)
class Memory:
    """`compiled.memory_analysis()` in bytes, with the fields that mean something on every backend."""

    temp: int
    """Buffers the program allocates for its own use while it runs (activations, residuals, ...)."""
    argument: int
    output: int
    alias: int
    """Output bytes written into donated arguments."""
    peak: int | None
    """`peak_memory_in_bytes` where JAX reports it (on CPU: arguments plus outputs, without temp)."""

    def describe(self) -> str:
        """`temp 11.9 MiB, arguments 2.1 MiB, outputs 2.0 MiB`."""
        return f"temp {size_text(self.temp)}, arguments {size_text(self.argument)}, outputs {size_text(self.output)}"


class Program:
    """A function compiled once for fixed argument shapes: call it to run that executable."""

    def __init__(self, name: str, compiled: Any) -> None:
        """Wrap an AOT-compiled executable (`jax.stages.Compiled`) made from the function `name`."""
        self.name = name
        self.compiled = compiled

    def __call__(self, *args: Any) -> Any:
        """Run the compiled executable on arguments of the shapes it was compiled for."""
        return self.compiled(*args)

    @cached_property
    def memory(self) -> Memory:
        """What XLA allocates for the program, from `memory_analysis()`."""
        stats = self.compiled.memory_analysis()
        peak = getattr(stats, "peak_memory_in_bytes", None)
        return Memory(int(stats.temp_size_in_bytes), int(stats.argument_size_in_bytes),
                      int(stats.output_size_in_bytes), int(stats.alias_size_in_bytes),
                      None if peak is None else int(peak))

    @property
    def temp_bytes(self) -> int:
        """`memory_analysis().temp_size_in_bytes`."""
        return self.memory.temp

    @cached_property
    def hlo_text(self) -> str:
        """The optimized HLO of the program, as XLA will run it."""
        return str(self.compiled.as_text())

    @property
    def hlo_size(self) -> int:
        """Instructions in the optimized HLO: grows with every layer XLA is handed written out."""
        return hlo_size(self.hlo_text)

    @cached_property
    def flops(self) -> float | None:
        """`cost_analysis()["flops"]`: counts a loop body once, whatever its trip count."""
        cost = self.compiled.cost_analysis()
        cost = cost[0] if isinstance(cost, list | tuple) and cost else cost
        value = cost.get("flops") if isinstance(cost, dict) else None
        return None if value is None else float(value)


def compile_program(fn: Callable[..., Any], *args: Any) -> Program:
    """Trace, lower and compile `jax.jit(fn)` for `args` once (arrays or `jax.ShapeDtypeStruct`s).

    Nothing runs and no argument is consumed. A program whose lowered text was compiled before in
    this process is not compiled again. Errors of the learner's code (tracing) pass through. In the judge,
    where `fn` is the learner's function seen from afar (or a trace an `in_executor` observation sent), the
    executor only traces it: the trace is compiled here, so what XLA says of it is read in this process.
    """
    from course.grading.observe.calls.strict_runs import runs_here

    if not runs_here(fn) or _is_trace(fn):
        return compile_trace(fn, *args)
    return compile_lowered(jax.jit(fn).lower(*args), str(getattr(fn, "__name__", type(fn).__name__)))


def compile_trace(fn: Any, *args: Any) -> Program:
    """The program of `jax.make_jaxpr(fn)(*args)` (made where `fn` runs, `traces.jaxprs.traced`), compiled here:
    the same operations `jax.jit(fn)` compiles, taking the arguments' leaves in order."""
    from jax.extend.core import jaxpr_as_fun

    from course.grading.observe.traces.jaxprs import traced

    closed = _without_frames(traced(fn, *args))
    run = jaxpr_as_fun(closed)
    leaves = jax.tree_util.tree_leaves(args)
    if len(leaves) != len(closed.in_avals):
        raise ValueError(f"a trace of {len(closed.in_avals)} inputs cannot be compiled for {len(leaves)} arrays")

    def program(*flat: Any) -> Any:
        return run(*flat)

    name = str(getattr(fn, "__name__", "program"))
    program.__name__ = program.__qualname__ = name
    try:
        return compile_lowered(jax.jit(program).lower(*leaves), name)
    except (AttributeError, TypeError) as exc:  # a parameter that arrived as its text (`jaxpr_values.Unsent`)
        from course.grading.feedback import PlatformFailure

        what = f"`{fn.__name__}`" if hasattr(fn, "__name__") else "your step"
        raise PlatformFailure(f"{what} could not be compiled where the grader measures it: its trace holds an "
                              f"operation whose parameters do not cross from the process running your code "
                              f"({type(exc).__name__}: {exc})") from None


def _without_frames(closed: Any) -> Any:
    """`closed` ready to lower here. A trace read from the executor holds its source frames as plain data
    (`course.engine.wire.jaxpr_objects.Traceback`), which lowering cannot join to its own: they are left out (they
    only name locations in the lowered text). A custom derivative's rule arrives as its text, and under `jax.jit`
    only its primal body is lowered: `custom_jvp_call` and `custom_vjp_call` become a call of that body
    (`jax.nn.relu`'s, say, or a learner's activation with a backward rule of its own)."""
    from jax._src import core, source_info_util

    done: dict[int, Any] = {}

    def eqn(e: Any) -> Any:
        info = source_info_util.SourceInfo(None, e.source_info.name_stack)
        if e.primitive.name in ("custom_jvp_call", "custom_vjp_call"):
            return e.replace(primitive=core.closed_call_p, params={"call_jaxpr": param(e.params["call_jaxpr"])},
                             source_info=info)
        return e.replace(source_info=info, params={k: param(v) for k, v in e.params.items()})

    def jaxpr(j: Any) -> Any:
        if id(j) not in done:
            done[id(j)] = j.replace(eqns=[eqn(e) for e in j.eqns])
        return done[id(j)]

    def param(v: Any) -> Any:
        if isinstance(v, core.ClosedJaxpr):
            return v.replace(jaxpr=jaxpr(v.jaxpr))
        if isinstance(v, core.Jaxpr):
            return jaxpr(v)
        if isinstance(v, tuple) and any(isinstance(x, core.Jaxpr | core.ClosedJaxpr) for x in v):
            items = [param(x) for x in v]  # a cond's branches, a linear solve's named jaxprs
            return type(v)._make(items) if hasattr(type(v), "_make") else tuple(items)
        return v

    return param(closed)


def _is_trace(fn: Any) -> bool:
    """Whether `fn` is a closed jaxpr (a trace sent by the executor) rather than a function."""
    import jax.extend as jex

    return isinstance(fn, jex.core.ClosedJaxpr)


def call_jitted(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`fn(*args, **kwargs)` run as `jax.jit` runs it, with every argument that is no array (a mesh, a Python
    number) static, as a grader's `jax.jit(lambda a: fn(a, mesh))` closes over it. In the judge, `fn` is the
    learner's function seen from afar: the executor jits and runs it there, and the values come back."""
    remote = getattr(fn, "call_jitted", None)
    if remote is not None:
        return remote(*args, **kwargs)
    return under_jit(fn, args, kwargs)(*args, **kwargs)


def grad_of_sum(fn: Callable[..., Any], *args: Any, argnums: tuple[int, ...] = (0,)) -> Any:
    """The gradients of `sum(fn(*args))` with respect to the arguments `argnums`, compiled once and run. In the
    judge, `fn` is the learner's function seen from afar: the executor differentiates and runs it there, and
    the gradients come back. Errors of the learner's code (a loop with no derivative) pass through."""
    remote = getattr(fn, "grad_of_sum", None)
    if remote is not None:
        return remote(*args, argnums=argnums)
    grad = jax.grad(lambda *inputs: jax.numpy.sum(fn(*inputs)), argnums=argnums)
    return compile_program(grad, *args)(*args)


def under_jit(fn: Callable[..., Any], args: tuple | list, kwargs: dict[str, Any]) -> Callable[..., Any]:
    """`jax.jit(fn)` with the positions and names of `args` and `kwargs` that are no arrays static."""

    def static(value: Any) -> bool:
        """A mesh or a Python scalar: what a grader's lambda would close over."""
        return value is None or isinstance(value, bool | int | float | str | jax.sharding.Mesh)

    return jax.jit(fn, static_argnums=tuple(i for i, a in enumerate(args) if static(a)),
                   static_argnames=tuple(k for k, v in kwargs.items() if static(v)))


def compile_lowered(lowered: Any, name: str = "") -> Program:
    """The `Program` of a `jax.stages.Lowered` (from `jax.jit(f).trace(...).lower()`, say), compiled once."""
    key = (lowered.as_text(), str(lowered.in_tree))
    compiled = _programs.get(key)
    if compiled is None:
        compiled = lowered.compile()
        _programs[key] = compiled
        while len(_programs) > _KEEP:
            _programs.popitem(last=False)
    else:
        _programs.move_to_end(key)
    return Program(name, compiled)


def hlo_size(hlo: Any) -> int:
    """How many instructions an HLO text (or a compiled object) holds, over all its computations."""
    text = hlo if isinstance(hlo, str) else hlo.as_text()
    return len(_INSTRUCTION.findall(text))


def mib(n: int | float) -> str:
    """`3.1 MiB`."""
    return f"{n / 2**20:.1f} MiB"


def size_text(n: int | float) -> str:
    """Bytes in the unit that reads best: `512 B`, `24.1 KiB`, `3.1 MiB`."""
    if abs(n) < 2**10:
        return f"{int(n)} B"
    if abs(n) < 2**20:
        return f"{n / 2**10:.1f} KiB"
    return mib(n)


def over_budget(what: str, got: int, budget: int) -> str:
    """`temp 3.1 MiB, over the 1.0 MiB budget` (or `within`), for a message."""
    word = "over" if got > budget else "within"
    return f"{what} {size_text(got)}, {word} the {size_text(budget)} budget"
