"""The executor's half of a split grading: it runs the learner's code for the judge, and nothing more.

The judge (`course.engine.remote`, in a process of its own) draws the inputs, asks for calls, and
computes every expected value and comparison itself. Here the learner's file is imported when the
judge asks, its functions are called with the arrays the judge sent, and what came out goes back
as raw arrays, with the facts only this process can see (which inputs the call consumed, where in
the learner's file an exception was raised). Everything sent from here may have been forged by the
learner's code, which shares this process: the judge trusts none of it beyond its shape.
"""

from __future__ import annotations

import contextlib
import math
import os
import socket
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from course.engine import peers, submission, wire
from course.grading.source import learner_frames

MAX_TEXT = 4000
MAX_PRINTED = 64 * 1024


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

    def serve(self, until: float = math.inf) -> None:
        """Answer requests in order until the judge starts a check after position `until` of the grader
        (its note `at`), says it is done, or goes away; a malformed request ends the service."""
        if self.judge_at > until or self.closed:
            return
        try:
            while (message := wire.receive(self.link)) is not None:
                header, buffers = message
                if header.get("op") == "done":
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
        return reply, out

    def _answer(self, header: dict[str, Any], buffers: list[bytes]) -> tuple[dict[str, Any], list[bytes]]:
        """The reply to one request: load the file, read a name, or call a function."""
        op = header.get("op")
        try:
            if op == "load":
                return self._load(header.get("fresh") is True), []
            target = self._resolve(str(header.get("name", "")))
            if op == "get":
                return self._value(target)
            if op == "call":
                # One of several processes says it is in the learner's function, so a hang names it.
                peers.announce(str(header.get("name", "")))
                return self._call(target, header, buffers)
        except submission.SubmissionError as exc:
            return {"ok": False, "load_error": str(exc)[:MAX_TEXT * 4]}, []
        except wire.WireError as exc:
            return {"ok": False, "error": _raised(exc, None)}, []
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

    def _resolve(self, name: str) -> Any:
        """The object `name` (dotted: an attribute of an attribute) of the loaded module."""
        if self.module is None:
            raise submission.SubmissionError("your file was not loaded before the check used it")
        target: Any = self.module
        for part in name.split("."):
            target = getattr(target, part)
        return target

    def _value(self, target: Any) -> tuple[dict[str, Any], list[bytes]]:
        """A module attribute: a callable is named as one, anything else is sent as a value."""
        if callable(target) and not isinstance(target, np.ndarray | np.generic):
            return {"ok": True, "callable": True, "type": type(target).__name__}, []
        out: list[bytes] = []
        return {"ok": True, "value": wire.encode(target, out, outgoing)}, out

    def _call(self, fn: Any, header: dict[str, Any], buffers: list[bytes]) -> tuple[dict[str, Any], list[bytes]]:
        """Call `fn` with the judge's arguments; send what it returned and which arguments it consumed."""
        import jax

        leaves: list[Any] = []
        args = wire.decode(header.get("args"), buffers, lambda data, node: leaves.append(incoming(data, node))
                           or leaves[-1])
        kwargs = wire.decode(header.get("kwargs"), buffers, lambda data, node: leaves.append(incoming(data, node))
                             or leaves[-1])
        if not isinstance(args, tuple | list) or not isinstance(kwargs, dict):
            raise wire.WireError("a call's arguments are malformed")
        result = jax.block_until_ready(_run_call(fn, header, args, kwargs))
        consumed = [i for i, leaf in enumerate(leaves) if isinstance(leaf, jax.Array) and leaf.is_deleted()]
        out: list[bytes] = []
        return {"ok": True, "value": wire.encode(result, out, outgoing), "consumed": consumed}, out


@contextlib.contextmanager
def printed() -> Iterator[list[str]]:
    """Standard output and error, at the descriptors (C code's too), sent to a file while the block runs;
    the list it gives holds their text afterwards (the last MAX_PRINTED bytes)."""
    import sys
    import tempfile

    kept: list[str] = []
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    try:
        saved, sink = (os.dup(1), os.dup(2)), tempfile.TemporaryFile()  # noqa: SIM115 - closed below
    except OSError:
        yield kept
        return
    try:
        os.dup2(sink.fileno(), 1)
        os.dup2(sink.fileno(), 2)
        yield kept
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        for fd, copy in zip((1, 2), saved, strict=True):
            with contextlib.suppress(OSError):
                os.dup2(copy, fd)
                os.close(copy)
        with contextlib.suppress(OSError):
            size = sink.seek(0, os.SEEK_END)
            sink.seek(max(0, size - MAX_PRINTED))
            text = sink.read().decode("utf-8", errors="replace")
            if text:
                kept.append(text)
        sink.close()


def _run_call(fn: Any, header: dict[str, Any], args: Any, kwargs: dict[str, Any]) -> Any:
    """Call `fn` as the judge asked: plainly, under `jax.jit` (`call_jitted`), as `strict_values` runs a
    kernel (`strict`), or inside the strict interpreter block the judge's check has open (`interpret`)."""
    strict, interpret = header.get("strict"), header.get("interpret")
    if strict is not None:
        return _strict(fn, str(header.get("name")), args, strict, jit=header.get("jit") is True)
    if header.get("jit") is True:  # run as the grader's `jax.jit` would
        from course.grading.programs import under_jit

        fn = under_jit(fn, args, kwargs)
    if interpret is None:
        return fn(*args, **kwargs)
    if not isinstance(interpret, dict):
        raise wire.WireError("a call's interpreter overrides are malformed")
    import jax

    from course.grading.tpu import tpu_interpret

    with tpu_interpret(**interpret):
        return jax.block_until_ready(fn(*args, **kwargs))


def _strict(fn: Any, name: str, args: Any, overrides: Any, *, jit: bool) -> Any:
    """`fn(*args)` as a grader runs a kernel for values: under the strict TPU interpreter, and (`jit`, as the
    grader's `jitted_once` asked) jitted once per shape."""
    from course.grading.strict_runs import jitted_once, strict_values

    if not isinstance(overrides, dict) or not all(isinstance(v, str | int | float | bool) for v in overrides.values()):
        raise wire.WireError("a strict call's parameters are malformed")
    key = (name, *((tuple(getattr(a, "shape", ())), str(getattr(a, "dtype", type(a).__name__))) for a in args))
    return strict_values(jitted_once(fn, key) if jit else fn, *args, **overrides)


def incoming(data: np.ndarray, node: dict[str, Any]) -> Any:
    """An argument as the judge made it: a jax.Array (with its sharding), a NumPy array or scalar."""
    kind = node.get("kind")
    if kind == "np":
        return data
    if kind == "npscalar":
        return data[()]
    if kind == "jax":
        return array_from(data, node)
    if kind == "mesh":
        return mesh_from(node.get("mesh"))
    raise wire.WireError(f"an argument of kind {kind!r} is not one")


def outgoing(value: Any) -> dict[str, Any] | None:
    """How a returned leaf is sent: arrays as their data, anything else named by its type."""
    import jax

    if isinstance(value, jax.sharding.Mesh):
        return {"data": np.zeros(0, np.float32), "kind": "mesh", "mesh": describe_mesh(value)}
    if isinstance(value, jax.Array):
        if value.is_deleted():
            return {"data": np.zeros(0, np.float32), "kind": "deleted", "type": "jax.Array"}
        return array_leaf(value)
    if isinstance(value, np.ndarray) and value.dtype.name in wire.DTYPES:
        return {"data": value, "kind": "np"}
    if isinstance(value, np.generic) and value.dtype.name in wire.DTYPES:
        return {"data": np.asarray(value), "kind": "npscalar"}
    return {"data": np.zeros(0, np.float32), "kind": "opaque", "type": type(value).__qualname__[:200]}


def array_leaf(value: Any) -> dict[str, Any]:
    """A jax.Array as sent: sharded over several devices, every device's block (copies of a replicated
    block may differ, and checks compare them); else its data."""
    sharding = describe_sharding(value)
    if sharding is not None:
        blocks = [np.asarray(s.data) for s in sorted(value.addressable_shards, key=lambda s: s.device.id)]
        if len({b.shape for b in blocks}) == 1:
            return {"data": np.stack(blocks), "kind": "jax", "sharding": sharding, "global": list(value.shape)}
    return {"data": np.asarray(value), "kind": "jax", "sharding": sharding}


def array_from(data: np.ndarray, node: dict[str, Any]) -> Any:
    """The jax.Array `array_leaf` sent: its data placed by its sharding, or its blocks each on its device."""
    import jax

    sharding = sharding_from(node.get("sharding"))
    shape = node.get("global")
    if shape is None or sharding is None:
        return jax.device_put(data, sharding)
    if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise wire.WireError("an array's shape is not one")
    devices = sorted(sharding.addressable_devices, key=lambda d: d.id)
    try:
        block = sharding.shard_shape(tuple(shape))
    except ValueError as exc:
        raise wire.WireError(f"an array's blocks do not fit its sharding: {exc}") from None
    if data.shape != (len(devices), *block):
        raise wire.WireError("an array's blocks do not fit its sharding")
    placed = [jax.device_put(b, d) for b, d in zip(data, devices, strict=True)]
    return jax.make_array_from_single_device_arrays(tuple(shape), sharding, placed)


def describe_mesh(mesh: Any) -> dict[str, Any]:
    """A Mesh as plain data: its devices' ids, its axes and their types."""
    return {"shape": list(mesh.devices.shape), "ids": [int(d.id) for d in mesh.devices.flat],
            "axes": [str(a) for a in mesh.axis_names], "types": [t.name for t in mesh.axis_types]}


def mesh_from(data: Any) -> Any:
    """The Mesh `describe_mesh` described (checked, since either side may send it)."""
    import jax
    from jax.sharding import AxisType, Mesh

    try:
        by_id = {d.id: d for d in jax.devices()}
        devices = np.array([by_id[int(i)] for i in data["ids"]], dtype=object).reshape(data["shape"])
        types = tuple(AxisType.__members__[str(t)] for t in data["types"])
        return Mesh(devices, tuple(str(a) for a in data["axes"]), axis_types=types)
    except (KeyError, TypeError, ValueError) as exc:
        raise wire.WireError(f"a mesh is malformed: {exc}") from None


def describe_sharding(array: Any) -> dict[str, Any] | None:
    """A NamedSharding as plain data (its mesh, as `describe_mesh`, and its spec), else None."""
    from jax.sharding import NamedSharding

    sharding = array.sharding
    if not isinstance(sharding, NamedSharding) or len(sharding.mesh.devices.flat) <= 1:
        return None
    spec = [list(p) if isinstance(p, tuple) else p for p in sharding.spec]
    return {**describe_mesh(sharding.mesh), "spec": spec}


def sharding_from(data: Any) -> Any:
    """The NamedSharding `describe_sharding` described (checked, since either side may send it), or None."""
    if data is None:
        return None
    from jax.sharding import NamedSharding, PartitionSpec

    try:
        spec = PartitionSpec(*(tuple(p) if isinstance(p, list) else p for p in data["spec"]))
        return NamedSharding(mesh_from(data), spec)
    except (KeyError, TypeError, ValueError) as exc:
        raise wire.WireError(f"a sharding is malformed: {exc}") from None


def _position(value: Any) -> float:
    """A grader position from the judge's note; WireError if it is not one."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise wire.WireError("a note of the judge's position is malformed")
    return value


def _raised(exc: BaseException, path: Path | None) -> dict[str, Any]:
    """An exception as data: its class names (outermost first), its text, and the learner's frames."""
    frames = learner_frames(exc.__traceback__, path)
    text = str(exc)
    # A callback's error (the TPU interpreter's) ends its long text with the cause: keep both ends.
    text = text if len(text) <= MAX_TEXT else f"{text[:MAX_TEXT // 2]}\n...\n{text[-MAX_TEXT // 2:]}"
    return {"types": [c.__name__ for c in type(exc).__mro__][:12], "text": text,
            "frames": [[f.filename, f.lineno or 0, f.name, (f.line or "")[:300]] for f in frames[-8:]]}
