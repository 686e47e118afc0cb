"""The executor's half of a split grading: it runs the learner's code for the judge, and nothing more.

The judge (`course.engine.judge.remote`, in a process of its own) draws the inputs, asks for calls, and
computes every expected value and comparison itself. Here the learner's file is imported when the
judge asks, its functions are called with the arrays the judge sent, and what came out goes back
as raw arrays, with the facts only this process can see (which inputs the call consumed, where in
the learner's file an exception was raised). Everything sent from here may have been forged by the
learner's code, which shares this process: the judge trusts none of it beyond its shape.
"""

from __future__ import annotations

import contextlib
import math
import socket
import types
from pathlib import Path
from typing import Any

import numpy as np

from course.engine.common import notary, peers, submission
from course.engine.common.streams import printed
from course.engine.executor import asks, probe, runs
from course.engine.executor.held import Held, behaves
from course.engine.executor.values import MAX_TEXT, _position, _raised, _Unsendable, incoming, outgoing
from course.engine.wire import wire
from course.grading.feedback import PlatformFailure
from course.grading.judge.source import learner_frames

MACHINERY = (
    "course.engine.wire.jaxprs", "course.grading.feedback", "course.grading.observe.calls.there",
    "course.grading.observe.calls.donation", "course.grading.observe.calls.programs",
    "course.grading.observe.calls.strict_runs", "course.grading.observe.calls.tpu",
    "course.grading.observe.calls.warmup", "course.grading.observe.kernels.aliasing",
    "course.grading.observe.kernels.kernels", "course.grading.observe.traces.jaxprs",
    "course.grading.observe.traces.sharding", "course.grading.judge.donors",
    "course.grading.observe.calls.executions", "course.grading.judge.fingerprint",
)
"""What answering the judge imports as it goes (here and in `course.engine.executor.asks`): loaded by `preload`."""


def preload() -> None:
    """Import the modules that answering the judge uses, so that they are in the guard's snapshot before any
    learner code runs: a function of theirs rebound by the learner's file is then tampering, as any other
    part of the machinery is."""
    import importlib

    for name in MACHINERY:
        importlib.import_module(name)


class _OwnFailure(Exception):
    """This process's own machinery failed (reading the judge's request, or sending back what the learner's code
    returned) with no frame of the learner's in the way: the platform's failure, never the learner's."""

    def __init__(self, doing: str, cause: BaseException) -> None:
        super().__init__(f"{doing}: {submission.describe_exception(cause)}")


class Executor:
    """Answers one judge's requests on `link` until it says it is done or goes away."""

    def __init__(self, link: socket.socket, path: Path, source: bytes | None) -> None:
        self.link, self.path, self.source = link, path, source
        self.module: types.ModuleType | None = None
        self.failed = ""
        """Why the shared import failed, if it did."""
        self.import_mb = 0.0
        self.judge_at: float = -1
        """The grader position of the check the judge last said it was starting."""
        self.closed = False
        self.held = Held()
        """The learner's objects the judge holds by number (`course.engine.executor.held`)."""
        self.stopped = False
        """The judge stopped at its first failing check (a grading that stops there): run no more checks."""
        self.programs_sent: set[str] = set()
        """Fingerprints of the programs sent to the judge already (`course.engine.judge.consistency`)."""

    def serve(self, until: float = math.inf) -> None:
        """Answer requests in order until the judge starts a check after position `until` of the grader
        (its note `at`), says it is done, or goes away; a malformed request ends the service."""
        if self.judge_at > until or self.closed:
            return
        try:
            while (message := wire.receive(self.link)) is not None:
                header, buffers = message
                if header.get("op") in ("done", "at"):  # the judge's turn moved on: the machinery is compared whole
                    notary.notify("course.turn")
                if header.get("op") == "done":
                    self.stopped = header.get("stopped") is True
                    break
                if header.get("op") == "at":
                    self.judge_at = _position(header.get("index"))
                    if self.judge_at > until:
                        return
                    continue
                reply, out = self.answer(header, buffers)
                wire.send(self.link, reply, out)
        except (OSError, wire.WireError):
            pass
        self.close()

    def close(self) -> None:
        """End the service: the judge is done or gone, and every later check may run."""
        self.closed, self.judge_at = True, math.inf
        with contextlib.suppress(OSError):
            self.link.close()

    def shared(self) -> types.ModuleType:
        """The module imported once for both sides' checks (SubmissionError, each time, if that failed)."""
        self._load(False)
        assert self.module is not None
        return self.module

    def answer(self, header: dict[str, Any], buffers: list[bytes]) -> tuple[dict[str, Any], list[bytes]]:
        """The reply to one request, with what the learner's code printed while it ran (shown under the
        judge's check, as a check in one process shows it)."""
        with printed() as text:
            reply, out = self._answer(header, buffers)
        if text:
            reply["printed"] = text[-1]
        notary.notify("course.answer")  # the machinery is compared, and the answer counted, before it leaves
        return reply, out

    def _answer(self, header: dict[str, Any], buffers: list[bytes]) -> tuple[dict[str, Any], list[bytes]]:
        """The reply to one request: load the file, read a name (of the module, or of an object the judge
        holds), call a function or method, or read or write an item of a held object."""
        op = header.get("op")
        try:
            if op == "load":
                return self._load(header.get("fresh") is True), []
            if op in ("item", "setitem"):
                return self._item(self.held.get(header.get("handle")), header, buffers)
            if op == "leaves":
                return self._leaves(self.held.get(header.get("handle")))
            if op == "observe":
                return self._observe(header, buffers)
            target = self._resolve(header)
            if op == "get":
                return self._value(target)
            if op == "call":
                # One of several processes says it is in the learner's function, so a hang names it.
                peers.announce(str(header.get("name", "")))
                return self._call(target, header, buffers)
        except submission.SubmissionError as exc:
            return {"ok": False, "load_error": str(exc)[:MAX_TEXT * 4]}, []
        except (_OwnFailure, PlatformFailure) as exc:  # a helper met a limit of the grading on the way
            return {"ok": False, "platform": str(exc)[:MAX_TEXT]}, []
        except _Unsendable as exc:  # what the learner's code returned is no value this protocol carries
            return {"ok": False, "error": _raised(exc.unsent, None)}, []
        except wire.WireError as exc:  # the judge's request is malformed: never the learner's doing
            return {"ok": False, "platform": f"reading the check's request: {exc}"[:MAX_TEXT]}, []
        except BaseException as exc:  # noqa: BLE001 - whatever the learner's code raised is the answer
            return {"ok": False, "error": _raised(exc, self.path)}, []
        return {"ok": False, "error": _raised(wire.WireError(f"no such request {op!r}"), None)}, []

    def _load(self, fresh: bool) -> dict[str, Any]:
        """Import the learner's file once for all the judge's checks (again only when a check asks for a
        module of its own); an import that failed fails each check that asks, with the same message."""
        if not fresh and self.failed:
            raise submission.SubmissionError(self.failed)
        if fresh or self.module is None:
            submission.release(self.path, self.import_mb)
            before = submission.resident_mb()
            try:
                self.module = submission.load(self.path, self.source)
            except submission.SubmissionError as exc:
                self.failed = str(exc)
                raise
            finally:
                self.import_mb = submission.resident_mb() - before
        return {"ok": True}

    def _resolve(self, header: dict[str, Any]) -> Any:
        """The object a request names: `name` (dotted: an attribute of an attribute) of the loaded module,
        or of the held object `handle`; the held object itself when it names none."""
        name = str(header.get("name", ""))
        if "handle" in header:
            target: Any = self.held.get(header["handle"])
        elif self.module is None:
            raise submission.SubmissionError("your file was not loaded before the check used it")
        else:
            target = self.module
        for part in name.split(".") if name else ():
            target = getattr(target, part)
        return target

    def _encode(self, value: Any, out: list[bytes]) -> Any:
        """`value` as the judge receives it (its arrays' bytes appended to `out`). A failure of the sending itself,
        with no frame of the learner's in it, is this process's own (`_OwnFailure`); a value this protocol
        does not carry stays the learner's (`_Unsendable`)."""
        try:
            return wire.encode(value, out, lambda leaf: self.held.keep(leaf, outgoing(leaf)),
                               whole=lambda container: behaves(container, self.module))
        except wire.WireError as exc:
            raise _Unsendable(exc) from exc
        except Exception as exc:  # noqa: BLE001 - whichever way the sending failed, it is told apart below
            if learner_frames(exc.__traceback__, self.path):
                raise
            raise _OwnFailure("sending back what your code returned", exc) from exc

    def _decode(self, node: Any, buffers: list[bytes], leaves: list[Any]) -> Any:
        """A value of the judge's request, rebuilt here. The judge's machinery sent it, so a failure to read it is
        this process's own (`_OwnFailure`), unless the learner's code is in the way (JAX patched by it, say)."""
        try:
            return wire.decode(node, buffers, self._in(leaves))
        except Exception as exc:  # noqa: BLE001 - whichever way the reading failed, it is told apart below
            if learner_frames(exc.__traceback__, self.path):
                raise
            raise _OwnFailure("reading the check's arguments", exc) from exc

    def _in(self, leaves: list[Any]) -> Any:
        """How a leaf the judge sent is rebuilt here (an object it holds is that object), noted in `leaves`."""
        def rebuilt(data: np.ndarray, node: dict[str, Any]) -> Any:
            leaves.append(self.held.get(node.get("id")) if node.get("kind") == "handle" else incoming(data, node))
            return leaves[-1]

        return rebuilt

    def _value(self, target: Any) -> tuple[dict[str, Any], list[bytes]]:
        """A module attribute: a callable is named as one, anything else is sent as a value."""
        if callable(target) and not isinstance(target, np.ndarray | np.generic) and wire.dtype_of(target) is None:
            return {"ok": True, "callable": True, "type": type(target).__name__}, []
        out: list[bytes] = []
        return {"ok": True, "value": self._encode(target, out)}, out

    def _item(self, held: Any, header: dict[str, Any], buffers: list[bytes]) -> tuple[dict[str, Any], list[bytes]]:
        """`held[key]`, or `held[key] = value`, as the judge asked."""
        import jax

        leaves: list[Any] = []
        key = self._decode(header.get("key"), buffers, leaves)
        if header.get("op") == "setitem":
            held[key] = self._decode(header.get("value"), buffers, leaves)
            return {"ok": True, "value": self._encode(None, [])}, []
        out: list[bytes] = []
        return {"ok": True, "value": self._encode(jax.block_until_ready(held[key]), out)}, out

    def _leaves(self, held: Any) -> tuple[dict[str, Any], list[bytes]]:
        """The pytree leaves of `held`, each `jax.Ref` read from the ref itself (never through the learner's
        own read), and which leaves were refs."""
        import jax

        leaves = jax.tree_util.tree_leaves(held)
        refs = [isinstance(leaf, jax.Ref) for leaf in leaves]
        out: list[bytes] = []
        values = [leaf[...] if ref else leaf for leaf, ref in zip(leaves, refs, strict=True)]
        return {"ok": True, "value": self._encode(values, out), "refs": refs}, out

    def _observe(self, header: dict[str, Any], buffers: list[bytes]) -> tuple[dict[str, Any], list[bytes]]:
        """Run a grader's observation (`in_executor`) on the learner's module; send what it returned, or the
        message of the check it failed."""
        import jax

        from course.grading.feedback import CheckFailed
        from course.grading.observe.calls.there import registered

        fn = registered(str(header.get("key", "")))
        args = self._decode(header.get("args"), buffers, [])
        if fn is None or not isinstance(args, tuple | list):
            raise wire.WireError("an observation is malformed or unknown here")
        try:
            result = jax.block_until_ready(fn(self.shared(), *args))
        except CheckFailed as exc:
            return {"ok": True, "failed": str(exc)[:MAX_TEXT * 4]}, []
        out: list[bytes] = []
        return {"ok": True, "value": self._encode(result, out)}, out

    def _call(self, fn: Any, header: dict[str, Any], buffers: list[bytes]) -> tuple[dict[str, Any], list[bytes]]:
        """Call `fn` with the judge's arguments; send what it returned and which arguments it consumed."""
        import jax

        leaves: list[Any] = []
        args = self._decode(header.get("args"), buffers, leaves)
        kwargs = self._decode(header.get("kwargs"), buffers, leaves)
        if not isinstance(args, tuple | list) or not isinstance(kwargs, dict):
            raise wire.WireError("a call's arguments are malformed")
        from course.grading.feedback import CheckFailed
        from course.grading.observe.calls.executions import record_runs

        # A plain call beside: of a `jax.jit` only for a trace with untraced arguments, and then first, since a trace
        # may leave tracers in the learner's caches (a jit built and kept while traced) that a later call would meet.
        static = probe.static_trace(header)
        spare = probe.spare_inputs(header, args, kwargs) if static or not probe.jitted_as_it_is(fn) else None
        out: list[bytes] = []
        first = probe.beside(fn, header, spare, [], self.programs_sent, out) if static and spare is not None else None
        try:
            with record_runs(programs=True) as ran:  # what the call really ran, sent with what it returned
                result = jax.block_until_ready(asks.run_call(fn, header, args, kwargs, self.path, self.module))
        except CheckFailed as exc:  # a grader's helper failed the check on the way (a tracing mistake explained)
            return {"ok": True, "failed": str(exc)[:MAX_TEXT * 4]}, []
        consumed = [i for i, leaf in enumerate(leaves) if isinstance(leaf, jax.Array) and leaf.is_deleted()]
        value = self._encode(result, out)
        plain = runs.plainly(header)
        encoded: dict[int, int] = {}  # a program both lists carry is encoded once
        reply = {"ok": True, "value": value, "consumed": consumed,
                 "ran": runs.ran_entries(ran.runs, self.programs_sent, out, structural=plain, encoded=encoded)}
        if plain and (chain := runs.fed(ran.runs, leaves, result, out, encoded)) is not None:  # for the judge
            reply["fed"] = {**chain, "consts": self._encode(chain["consts"], out)}
        if first is not None or spare is not None:
            reply["plain"] = first or probe.beside(fn, header, spare, probe.shown(header, ran.runs, result),
                                                  self.programs_sent, out)
        return reply, out
