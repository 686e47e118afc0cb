"""One function, one program: every program a learner's function ran or showed, kept per input types, must agree.

The judge reads programs (traces) and compares values (calls), each asked of the executor
separately. A function could tell the two apart (a tracer among its arguments, a grader's frame
on its stack, a call counter) and show one program to a trace and run another. So the executor
sends, with every call's answer, the programs the call really ran (its run recorder keeps them,
`course.grading.observe.calls.executions`), each as its fingerprint
(`course.grading.judge.fingerprint`) and, the first time, the program itself; the judge reads
the program, computes its fingerprint itself, and keeps, per function and input types, the first
program it met, from a trace or a call alike. A later one that differs fails the check that met
it: the function behaved two ways, and nothing it showed can be trusted for the other.

Two kinds are kept apart: a call the grader jitted (one program: the function's whole body, as a
trace shows it) and a plain call (the sequence of the learner's own jitted programs it ran, each with the
arguments it donated). The call `jit_calls` makes to read what the programs donate is a plain call like the
ones whose values and deletions are compared, so the two are held to each other.
"""

from __future__ import annotations

from typing import Any

__all__ = ["HOST_CALLBACKS", "JITTED", "PLAIN", "no_host_callbacks", "note_call", "note_plain", "note_static_trace",
           "note_trace", "received", "still_one_program"]

JITTED, PLAIN = "jitted", "plain"
_SEEN: Any = None
"""The judge's `Seen` (made on first use: one judge process grades one file)."""
_VERIFIED: set[str] = set()
"""Fingerprints the judge computed itself from a program the executor sent."""
_PROGRAMS: dict[str, Any] = {}
"""Those programs, by fingerprint, as JAX's own objects."""
_SHARDED: set[str] = set()
"""Functions whose program runs a `shard_map` and whose plain call was made and held to it: the executor makes one
per such function (`probe.plain_call`), and says it skipped the later ones."""
_STATIC_CALLED: set[tuple[str, str]] = set()
"""Functions and input types whose trace with untraced arguments came with a plain call (`note_static_trace`)."""
_STRUCTURES: dict[tuple[str, str], dict[str, list[str]]] = {}
"""Per function and input types, the structure its first trace showed and its first plain call ran."""
_DIVERGED: str | None = None
"""Why the learner's code can no longer be trusted in this grading, once a function behaved two ways."""


def received(header: dict[str, Any], returned: list[bytes]) -> None:
    """In the judge, for every answer: read and check each program it carries the first time, whatever the request
    (the executor sends a program once, and a later answer may name it by its fingerprint alone)."""
    plain = header.get("plain")
    for entries in (header.get("ran"), plain.get("ran") if isinstance(plain, dict) else None):
        if isinstance(entries, list):
            for entry in entries:
                if isinstance(entry, list) and len(entry) == 4 and type(entry[2]) is int and entry[2] >= 0:
                    _verified(entry, returned)


def note_trace(name: str, inputs: str, closed: Any) -> None:
    """In the judge: a trace of `name` at `inputs` (which the grader reads as the program a jitted call runs)."""
    from course.grading.judge.fingerprint import fingerprint, structure

    _agree(name, JITTED, inputs, fingerprint(closed))
    _same_structure(name, inputs, "traced", structure(closed))


def note_call(name: str, inputs: str, kind: str, entries: Any, returned: list[bytes], plain: Any = None) -> None:
    """In the judge: the programs a call of `name` at `inputs` ran, as the executor's answer lists them
    (`ran_entries`). A jitted call ran one program; a plain call, the learner's jitted programs in order. A
    jitted call may come with a plain call of the same inputs (`plain_call`), whose kernels must be its own."""
    from course.grading.feedback import fail

    if not isinstance(entries, list):
        fail("the process running your code did not say which programs your call ran; something in your file "
             "changed what it sends")
    printed = [_verified(entry, returned) for entry in entries]
    if kind == JITTED:
        if len(printed) != 1:
            fail(f"the grader's `jax.jit` of `{name}` ran {len(printed)} programs where it runs one; something in "
                 "your file changed how calls are recorded")
        _agree(name, JITTED, inputs, printed[0])
        if plain is not None:
            note_plain(name, inputs, _PROGRAMS[entries[0][1]], plain, returned)
    else:
        from course.grading.judge.fingerprint import structure

        # What each program donated is part of what a plain call ran: the call whose deletion of an argument is
        # reported and the one whose compiled texts `jit_calls` reads must have donated alike.
        _agree(name, PLAIN, inputs, " ".join(f"{p} donating {entry[3]}" for p, entry in zip(printed, entries,
                                                                                             strict=True)))
        _same_structure(name, inputs, "called", [part for p in printed for part in structure(_PROGRAMS[p])])


def note_plain(name: str, inputs: str, program: Any, plain: Any, returned: list[bytes]) -> None:
    """In the judge: the structure (`fingerprint.structure`: kernels, shard_maps, collectives, loops) a plain call
    ran must be that of the program the grader's jit or trace of the same call ran. A plain call that raised is
    a function that runs under the grader's jit and not when a learner calls it: two ways again."""
    from course.grading.judge.fingerprint import maps_shards, structure

    if isinstance(plain, dict) and "raised" in plain:
        _diverge(name, inputs, f"under the grader's `jax.jit` or trace, it ran; called as a learner calls it, with "
                               f"the same arguments, it raised {str(plain['raised'])[:200]}")
    theirs = structure(program)  # walked once: a ring's program is 259 KB
    if isinstance(plain, dict) and "skipped" in plain:  # made once per function whose program runs a `shard_map`
        if not (maps_shards(theirs) and name in _SHARDED):
            _diverge(name, inputs, "the process running your code skipped a plain call of it that it owed")
        return
    if not isinstance(plain, dict) or not isinstance(plain.get("ran"), list):
        _diverge(name, inputs, "the process running your code described a plain call of it that is not one")
    for entry in plain["ran"]:
        _verified(entry, returned)
    ran = [_PROGRAMS[entry[1]] for entry in plain["ran"]]
    mine = [part for closed in ran for part in structure(closed)]
    if mine != theirs:
        _diverge(name, inputs, "called as a learner calls it, without a `jax.jit` around it, it ran other kernels, "
                               "collectives or loops than it did under the grader's `jax.jit` or trace")
    if maps_shards(theirs):
        _SHARDED.add(name)


def note_static_trace(name: str, inputs: str, closed: Any, plain: Any, returned: list[bytes]) -> None:
    """In the judge: a trace of `name` with some arguments passed untraced (`traced(..., static=...)`), whose types
    alone do not make its program, held to the plain call the executor made at the very same arguments. One such
    call is made per function and input types; the executor may say nothing of a later one only after that."""
    if plain is None:
        if (name, inputs) not in _STATIC_CALLED:
            _diverge(name, inputs, "the process running your code skipped a plain call of it that it owed")
        return
    _STATIC_CALLED.add((name, inputs))
    note_plain(name, inputs, closed, plain, returned)


def _verified(entry: Any, returned: list[bytes]) -> str:
    """The fingerprint an entry claims, checked: computed here from the program when it came, else one computed
    here before."""
    from course.engine.wire.jaxpr_objects import decode
    from course.grading.feedback import fail
    from course.grading.judge.fingerprint import fingerprint

    ok = (isinstance(entry, list) and len(entry) == 4 and isinstance(entry[1], str) and type(entry[2]) is int
          and isinstance(entry[3], list) and all(type(i) is int for i in entry[3]))
    if ok and 0 <= entry[2] < len(returned):
        try:
            program = decode(returned[entry[2]])
            mine = fingerprint(program)
        except Exception:  # noqa: BLE001 - a program that cannot be read is no program
            program, mine = None, ""
        ok = mine == entry[1]
        if ok:
            _VERIFIED.add(mine)
            _PROGRAMS[mine] = program
    elif ok:
        ok = entry[1] in _VERIFIED
    if not ok:
        fail("the process running your code described a program it ran that is not one; something in your file "
             "changed what it sends")
    return str(entry[1])


def _agree(name: str, kind: str, inputs: str, printed: str) -> None:
    """Keep the first program of `name` at `inputs`; fail the check when this one differs."""
    global _SEEN
    from course.grading.judge.fingerprint import Seen

    global _DIVERGED
    if _SEEN is None:
        _SEEN = Seen()
    if _SEEN.note(f"{name}/{kind}", inputs, printed) is not None:
        _diverge(name, inputs, "it ran a different program than it did earlier in this grading, for the same types")


def _same_structure(name: str, inputs: str, how: str, parts: list[str]) -> None:
    """A trace of `name` at `inputs` and a plain call at the same types must run the same kernels, `shard_map`s,
    collectives and loops (`fingerprint.structure`): a grader that reads a trace while its values come from plain
    calls judges the program the calls ran. The first of each kind is kept; one function, one program holds the
    later ones of the same kind to it."""
    kept = _STRUCTURES.setdefault((name, inputs), {})
    kept.setdefault(how, parts)
    if len(kept) == 2 and kept["traced"] != kept["called"]:
        _diverge(name, inputs, "called as a learner calls it, it ran other kernels, collectives or loops than its "
                               "trace shows")


def _diverge(name: str, inputs: str, what: str) -> None:
    """Fail this check, and every later one, because `name` behaved two ways at `inputs`."""
    global _DIVERGED
    from course.grading.feedback import fail

    _DIVERGED = (f"`{name}` behaves two ways for inputs {inputs}: {what}. Your function computes one way in one "
                 "call and another way in the next (a branch on whether it is being traced, on a counter, on its "
                 "caller?). The grader judges the program your function runs; make it compute the same way "
                 "every time it is given the same types. No check after this one counts what your code shows.")
    fail(_DIVERGED)


HOST_CALLBACKS = ("pure_callback", "io_callback")
"""Primitives that call back into Python on the host from inside a program (`jax.debug.callback` prints, and may
stay)."""


def no_host_callbacks(name: str, entries: Any) -> None:
    """In the judge, for a call whose values a check compares: fail it when a program the call ran calls back into
    the learner's Python on the host. What comes back from there is made outside the program the judge reads, and
    the judge cannot run it; values that pass through one are not the program's own."""
    from course.grading.feedback import fail
    from course.grading.observe.traces.jaxprs import equations

    found: set[str] = set()
    for entry in entries if isinstance(entries, list) else []:
        closed = _PROGRAMS.get(entry[1]) if isinstance(entry, list) and len(entry) > 1 else None
        if closed is not None:
            found.update(e.primitive.name for e in equations(closed) if e.primitive.name in HOST_CALLBACKS)
    if found:
        fail(f"the program your call of `{name}` ran calls back into Python on the host "
             f"({', '.join(f'`{p}`' for p in sorted(found))}): what comes back from there is made outside the program "
             "the grader judges and cannot run, so its values are not the program's own. Compute the result in the "
             "program itself; a host round trip inside it is what this course teaches to avoid.")


def still_one_program() -> None:
    """In the judge, before asking anything of the learner's code: once a function has run two programs for the
    same types, nothing it shows or returns is trusted again, so every later check fails with that reason."""
    if _DIVERGED is not None:
        from course.grading.feedback import fail

        fail(_DIVERGED)
