"""The executor's half of one function, one program: the programs a call really ran, sent with its answer.

The judge (`course.engine.judge.consistency`) reads them and holds every program a function ran or
showed to agree; here each call's programs are listed, and a plain call is made beside a jitted one.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any


def ran_entries(runs: Any, sent: set[str], out: list[bytes], *, structural: bool = False,
                encoded: dict[int, int] | None = None) -> list[list[Any]]:
    """In the executor: [name, fingerprint, buffer index or -1, the arguments it donated] for each jitted program
    of the learner's a call ran, in order (with `structural`, also each of JAX's own that holds a kernel, a loop or
    a collective: an eager `lax.scan` runs as one); a program not sent before is appended to `out` (and noted in
    `sent`, and in `encoded` by the program's identity, so that the same answer's chain sends that buffer again
    rather than a second encoding of it)."""
    from course.engine.wire.jaxprs import encode
    from course.grading.judge.fingerprint import fingerprint

    entries = []
    for run in listed(runs, structural=structural):
        printed = fingerprint(run.program)
        index = -1
        if printed not in sent:
            out.append(encode(run.program))
            index = len(out) - 1
            sent.add(printed)
            if encoded is not None:
                encoded[id(run.program)] = index
        entries.append([run.fun_name, printed, index, [i for i, d in enumerate(run.donated) if d]])
    return entries


def listed(runs: Any, *, structural: bool = False) -> list[Any]:
    """The runs `ran_entries` lists, in order: the learner's jitted programs (with `structural`, also JAX's own that
    hold a kernel, a loop or a collective)."""
    from course.grading.judge.fingerprint import structure

    return [run for run in runs
            if run.program is not None and not (run.helper and not (structural and structure(run.program)))]


MAX_CHAIN = 256
"""A call that ran more programs than this (a loop of steps, an unjitted model) sends no chain (`fed`)."""


def fed(runs: list[Any], leaves: list[Any], result: Any, out: list[bytes],
        encoded: dict[int, int] | None = None) -> dict[str, Any] | None:
    """In the executor, for a plain call: every program it ran (JAX's own eager operations too, in order), and where
    each one's inputs and each leaf of what it returned came from, so that the judge can run them itself
    (`course.engine.judge.replay`); None past `MAX_CHAIN` programs, or when a chain cannot be made (nothing of it is
    then kept or sent, and a grader that needs one says so). A program is ["sent", b, t] (its trace, appended to
    `out`, known as t from now on), ["seen", t] (sent before) or ["put", n] (a transfer of n values, which has no
    program); a source is ["arg", k] (the call's k-th argument leaf, as itself), ["out", p, j] (output j of program
    p), ["const", c] (a Python or NumPy number, 0-d arrays too, or an empty array, the c-th of "consts") or ["other"]
    (made outside the programs: by NumPy from an array's values, say). A call that ran an ahead-of-time compiled
    program, which has none to send, says only that ("aot"). A program the same answer already carries (`encoded`:
    buffer indices by the program's identity, from `ran_entries`) is sent as that buffer."""
    before, numbered = len(out), len(_SENT)
    try:
        return _fed(runs, leaves, result, out, encoded or {})
    except Exception:  # noqa: BLE001 - whatever failed, the call's answer goes without a chain
        del out[before:]
        for key in [key for key, (_, number) in _SENT.items() if number >= numbered]:  # numbered by this call
            del _SENT[key]
        return None


def _fed(runs: list[Any], leaves: list[Any], result: Any, out: list[bytes],
         encoded: dict[int, int]) -> dict[str, Any] | None:
    """`fed`, which may raise."""
    import jax
    import numpy as np

    from course.engine.wire.jaxprs import encode

    chain = chained(runs)
    if len(chain) > MAX_CHAIN:
        return None
    if any(run.program is None and not run.helper for run in runs):  # an ahead-of-time `Compiled`: no program
        return {"programs": [], "inputs": [], "result": [], "consts": [], "aot": True}
    constants: list[Any] = []

    def source(value: Any, before: int) -> list[Any]:
        for k, leaf in enumerate(leaves):
            if value is leaf or _view_of(value, leaf):
                return ["arg", k]
        for p in range(before - 1, -1, -1):
            for j, made in enumerate(chain[p].outs):
                if value is made:
                    return ["out", p, j]
        if type(value) in (bool, int, float) or isinstance(value, np.generic):
            constants.append(value)
            return ["const", len(constants) - 1]
        if isinstance(value, np.ndarray) and value.ndim == 0:  # a number JAX's own eager operations made (a
            constants.append(np.array(value, copy=True)[()])  # derivative's seed, a mean's count): as a scalar
            return ["const", len(constants) - 1]
        if isinstance(value, np.ndarray) and value.size == 0:  # holds nothing but its type: the empty indices of
            constants.append(np.array(value, copy=True))     # the scatter JAX makes for `.at[:n].set` of all n rows
            return ["const", len(constants) - 1]
        return ["other"]

    def named(run: Any) -> list[Any]:
        if run.program is None:  # a transfer
            return ["put", len(run.args)]
        token = _SENT.get(id(run.program))
        if token is not None and token[0] is run.program:
            return ["seen", token[1]]
        index = encoded.get(id(run.program))
        if index is None:
            out.append(encode(run.program))
            index = len(out) - 1
        _SENT[id(run.program)] = (run.program, len(_SENT))
        return ["sent", index, _SENT[id(run.program)][1]]

    return {"programs": [named(run) for run in chain],
            "inputs": [[source(arg, p) for arg in run.args] for p, run in enumerate(chain)],
            "result": [source(leaf, len(chain)) for leaf in jax.tree_util.tree_leaves(result)],
            "consts": constants}


def chained(runs: list[Any]) -> list[Any]:
    """The runs of a call that make its chain, in order: its programs and its transfers."""
    return [run for run in runs if run.program is not None or _transfer(run)]


def _view_of(value: Any, leaf: Any) -> bool:
    """Whether `value` is a NumPy view of the NumPy argument `leaf`, whole (JAX wraps a NumPy value it transfers)."""
    import numpy as np

    return (isinstance(value, np.ndarray) and isinstance(leaf, np.ndarray) and value.base is leaf
            and value.shape == leaf.shape and value.dtype == leaf.dtype)


def _transfer(run: Any) -> bool:
    """Whether a run is an eager transfer (`jax.device_put`, `jnp.asarray` of a NumPy value): no program, each input
    its own output."""
    return run.program is None and run.helper and run.fun_name == "device_put" and 0 < len(run.args) == len(run.outs)


_SENT: dict[int, tuple[Any, int]] = {}
"""Each program sent in a chain so far, by identity (JAX keeps one per jit and input types; two that differ only in
a constant baked into them are two), with the number the judge knows it by."""


def plainly(header: dict[str, Any]) -> bool:
    """Whether a request calls the function as a learner does (for its values, under the strict interpreter or not,
    or for the programs `jit_calls` reads), so that the judge holds what it ran, JAX's own programs of kernels and
    loops included, to its trace and to its other plain calls."""
    return header.get("jit") is not True and all(header.get(k) is None for k in _KINDS if k not in ("strict", "jits"))


_KINDS = ("strict", "case", "trace", "watch", "jits", "grad", "aliased")
"""The kinds of call request besides a plain one (`course.engine.executor.asks`)."""


PROBED = ("strict", "case")
"""Requests that run the learner's function under the grader's jit or trace: a plain call is made beside them."""


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
        header.get(k) is None for k in _KINDS if k != "trace")


def spare_inputs(header: dict[str, Any], args: Any, kwargs: Any) -> tuple[Any, Any] | None:
    """In the executor, for a call run under the grader's jit (a plain call with `jit`, a kernel's values with
    `strict` and `jit`, or a traced case), or a trace with arguments passed untraced (`static`), of a function at
    input types not probed before: copies of the inputs, for the plain call made beside it (`plain_call`); None for
    any other request."""
    kinds = [k for k in _KINDS if header.get(k) is not None]
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
    """`jax.set_mesh` of the first mesh with an explicit axis among the arguments (a mesh itself, or one an array is
    sharded on), else nothing. Outside a jit, JAX runs no operation on arrays of such a mesh until it is the current
    one ("enter your `jit` into a mesh context via `jax.set_mesh`"), which is how a learner calls such a function;
    the grader's jit needs none."""
    import jax

    for leaf in jax.tree_util.tree_leaves((args, kwargs)):
        mesh = leaf if isinstance(leaf, jax.sharding.Mesh) else getattr(getattr(leaf, "sharding", None), "mesh", None)
        if isinstance(mesh, jax.sharding.Mesh) and jax.sharding.AxisType.Explicit in mesh.axis_types:
            return jax.set_mesh(mesh)
    return contextlib.nullcontext()


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
