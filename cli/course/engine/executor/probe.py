"""The plain call made beside a request that runs the learner's function under the grader's jit or trace.

A function could tell a call of the grader's from a learner's (a tracer among its arguments, the grader's frame on
its stack) and run one program for the grader and another for everyone else. So beside such a request the executor
calls the function as a learner calls it, at the same arguments, lists the programs that call ran
(`runs.ran_entries`), and the judge (`course.engine.judge.consistency`) holds them to what the request ran.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any

from course.engine.executor.runs import KINDS, ran_entries

_PROBED: set[tuple[str, str]] = set()
"""The functions and input types a plain call was made for in this process: one per pair is enough, since the judge
keeps one program per function and input types, and a second would double the cost of every check's calls."""


def jitted_as_it_is(fn: Any) -> bool:
    """Whether `fn` is itself a `jax.jit` (JAX's own type, which no class of the learner's can be): called plainly,
    it traces the learner's Python with tracers as the grader's jit does, so a plain call would show nothing new
    and pay a second compile."""
    return type(fn) is _jit_type()


@functools.cache
def _jit_type() -> type:
    """The type of a `jax.jit` object."""
    import jax

    return type(jax.jit(lambda: None))


def static_trace(header: dict[str, Any]) -> bool:
    """Whether a request traces a function with some arguments passed untraced (`traced(..., static=...)`): its
    program depends on their values, so a plain call at the same arguments is made beside it, even of a `jax.jit`."""
    trace = header.get("trace")
    return isinstance(trace, dict) and bool(trace.get("static")) and all(
        header.get(k) is None for k in KINDS if k != "trace")


def spare_inputs(header: dict[str, Any], args: Any, kwargs: Any) -> tuple[Any, Any] | None:
    """In the executor, for a call run under the grader's jit (a plain call with `jit`, a kernel's values with
    `strict` and `jit`, or a traced case), or a trace with arguments passed untraced (`static`), of a function at
    input types not probed before: copies of the inputs, for the plain call made beside it (`plain_call`); None for
    any other request."""
    kinds = [k for k in KINDS if header.get(k) is not None]
    jitted = header.get("jit") is True and (not kinds or kinds == ["strict"])
    static = static_trace(header)
    if not (jitted or static or kinds == ["case"]):
        return None
    import jax
    import jax.numpy as jnp

    from course.grading.judge.fingerprint import signature

    key = (f"{header.get('handle', '')}/{header.get('name', '')}{'/static' if static else ''}",
           signature(args, kwargs))
    if key in _PROBED:
        return None
    _PROBED.add(key)

    def spare(leaf: Any) -> Any:
        return jnp.array(leaf, copy=True) if isinstance(leaf, jax.Array) else leaf

    return jax.tree_util.tree_map(spare, args), jax.tree_util.tree_map(spare, kwargs)


def shown(header: dict[str, Any], ran: list[Any], result: Any) -> list[Any]:
    """The programs a request showed of the function: those a jitted call ran, or a traced case's trace."""
    programs = [run.program for run in ran if run.program is not None]
    return programs + ([result[0]] if isinstance(header.get("case"), dict) else [])


def beside(fn: Any, header: dict[str, Any], spare: Any, programs: list[Any], sent: set[str], out: list[bytes]) -> Any:
    """The plain call made beside a request (`plain_call`) with its `spare_inputs`, keyed by the function called;
    `programs` are those the request showed (`shown`)."""
    return plain_call(fn, *spare, sent, out, programs, f"{header.get('handle', '')}/{header.get('name', '')}")


_SHARDED: set[str] = set()
"""The functions whose program runs a `shard_map` that a plain call was made of in this process."""


def plain_call(fn: Any, args: Any, kwargs: Any, sent: set[str], out: list[bytes], shown: list[Any],
               key: str) -> dict[str, Any]:
    """In the executor: call `fn` as a learner calls it, without the grader's jit, on the same inputs (its kernels
    under the fast interpreter: only what they are matters here), and list the programs it ran (`ran_entries`);
    or say what it raised. A function that branches on whether its arguments are tracers runs its other branch
    here, and the judge sees it. A `shard_map` it calls runs compiled (`compiled_shard_maps`), once per function
    (`key`) whose program (`shown`: what the grader's jit or trace of this call ran) runs one."""
    import jax
    from jax.experimental.pallas import tpu as pltpu

    from course.grading.judge.fingerprint import maps_shards, structure
    from course.grading.observe.calls.executions import record_runs

    sharded = any(maps_shards(structure(program)) for program in shown)
    if sharded and key in _SHARDED:
        # Its plain call compiles the `shard_map` apart from the grader's: at each of a ring's 11 input types,
        # 2.8 s of a 6.5 s grading, and a validation under load ran past its limit. One per function is made.
        return {"skipped": "shard_map"}

    from course.grading.observe.calls.strict_runs import tpu_fallback

    def call() -> Any:
        """The call, recorded; a kernel that asks which TPU it runs on (`emit_pipeline`) is told a v5e, as under
        the grader's strict run, and a mesh with explicit axes among the arguments is the current one."""
        with (pltpu.force_tpu_interpret_mode(True), _explicit_mesh_of(args, kwargs),
              record_runs(programs=True) as ran, compiled_shard_maps()):
            jax.block_until_ready(fn(*args, **kwargs))
        return ran

    try:
        ran = tpu_fallback(call)
    except Exception as exc:  # noqa: BLE001 - what it raised is the judge's to weigh
        return {"raised": f"{type(exc).__name__}: {str(exc)[:300]}"}
    if sharded:
        _SHARDED.add(key)
    return {"ran": ran_entries(ran.runs, sent, out, structural=True)}


def _explicit_mesh_of(args: Any, kwargs: Any) -> Any:
    """`jax.set_mesh` of the arguments' mesh (`sharded_mesh`) when it has an explicit axis, else nothing. Outside a
    jit, JAX runs no operation on arrays of such a mesh until it is the current one ("enter your `jit` into a mesh
    context via `jax.set_mesh`"), which is how a learner calls such a function; the grader's jit needs none."""
    import jax

    from course.grading.observe.calls.donation import sharded_mesh

    mesh = sharded_mesh((args, kwargs))
    if mesh is None or jax.sharding.AxisType.Explicit not in mesh.axis_types:
        return contextlib.nullcontext()
    return jax.set_mesh(mesh)


@contextlib.contextmanager
def compiled_shard_maps() -> Iterator[None]:
    """While the body runs, a `shard_map` called outside any jit runs as one compiled program.

    Called plainly, JAX runs a `shard_map`'s body one operation at a time across the devices, each compiled on
    its own: a ring of 8 devices took 15 s where the jitted call takes 0.4 s. Compiling the `shard_map` whole
    changes nothing the learner's Python sees (its body is traced either way; the function around it still runs
    with real arrays), and the program it runs is the one the run recorder keeps.
    """
    import jax
    from jax._src import core
    from jax._src import shard_map as shard_maps

    eager = core.EvalTrace.process_shard_map

    def compiled(trace: Any, prim: Any, fun: Any, args: Any, **params: Any) -> Any:
        shaped: list[Any] = []

        def body(*values: Any) -> list[Any]:
            flat = shard_maps.shard_map_p.bind(*values, subfuns=(fun,), **params)
            shaped.append(flat)
            return list(flat.vals)

        results = jax.jit(body)(*args)
        return shaped[0].update(results)

    core.EvalTrace.process_shard_map = compiled
    try:
        yield
    finally:
        core.EvalTrace.process_shard_map = eager
