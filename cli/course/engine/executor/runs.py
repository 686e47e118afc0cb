"""The executor's half of one function, one program: the programs a call really ran, sent with its answer.

The judge (`course.engine.judge.consistency`) reads them and holds every program a function ran or
showed to agree; here each call's programs are listed, and each plain call's chain is made for the judge to run
again (`course.engine.judge.replay`). The plain call made beside a grader's jit is `course.engine.executor.probe`'s.
"""

from __future__ import annotations

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
    return header.get("jit") is not True and all(header.get(k) is None for k in KINDS if k not in ("strict", "jits"))


KINDS = ("strict", "case", "trace", "watch", "jits", "grad", "aliased")
"""The kinds of call request besides a plain one (`course.engine.executor.asks`)."""
