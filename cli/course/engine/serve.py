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
import socket
import types
from pathlib import Path
from typing import Any

import numpy as np

from course.engine import submission, wire
from course.grading.source import learner_frames

MAX_TEXT = 4000


class Executor:
    """Answers one judge's requests on `link` until it says it is done or goes away."""

    def __init__(self, link: socket.socket, path: Path, source: bytes | None) -> None:
        self.link, self.path, self.source = link, path, source
        self.module: types.ModuleType | None = None
        self.import_mb = 0.0

    def serve(self) -> None:
        """Answer requests in order; a broken link or a malformed request ends the service."""
        with contextlib.suppress(OSError, wire.WireError):
            while (message := wire.receive(self.link)) is not None:
                header, buffers = message
                if header.get("op") == "done":
                    break
                reply, out = self.answer(header, buffers)
                wire.send(self.link, reply, out)
        with contextlib.suppress(OSError):
            self.link.close()

    def answer(self, header: dict[str, Any], buffers: list[bytes]) -> tuple[dict[str, Any], list[bytes]]:
        """The reply to one request: load the file, read a name, or call a function."""
        op = header.get("op")
        try:
            if op == "load":
                return self._load(), []
            target = self._resolve(str(header.get("name", "")))
            if op == "get":
                return self._value(target)
            if op == "call":
                return self._call(target, header, buffers)
        except submission.SubmissionError as exc:
            return {"ok": False, "load_error": str(exc)[:MAX_TEXT * 4]}, []
        except wire.WireError as exc:
            return {"ok": False, "error": _raised(exc, None)}, []
        except BaseException as exc:  # noqa: BLE001 - whatever the learner's code raised is the answer
            return {"ok": False, "error": _raised(exc, self.path)}, []
        return {"ok": False, "error": _raised(wire.WireError(f"no such request {op!r}"), None)}, []

    def _load(self) -> dict[str, Any]:
        """Import the learner's file afresh, as each check in a single process does."""
        submission.release(self.path, self.import_mb)
        before = submission.resident_mb()
        try:
            self.module = submission.load(self.path, self.source)
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
        interpret = header.get("interpret")
        if interpret is None:
            result = jax.block_until_ready(fn(*args, **kwargs))
        elif isinstance(interpret, dict):  # the judge's check called it inside `tpu_interpret(**interpret)`
            from course.grading.tpu import tpu_interpret

            with tpu_interpret(**interpret):
                result = jax.block_until_ready(fn(*args, **kwargs))
        else:
            raise wire.WireError("a call's interpreter overrides are malformed")
        consumed = [i for i, leaf in enumerate(leaves) if isinstance(leaf, jax.Array) and leaf.is_deleted()]
        out: list[bytes] = []
        return {"ok": True, "value": wire.encode(result, out, outgoing), "consumed": consumed}, out


def incoming(data: np.ndarray, node: dict[str, Any]) -> Any:
    """An argument as the judge made it: a jax.Array (with its sharding), a NumPy array or scalar."""
    kind = node.get("kind")
    if kind == "np":
        return data
    if kind == "npscalar":
        return data[()]
    if kind == "jax":
        import jax

        return jax.device_put(data, sharding_from(node.get("sharding")))
    raise wire.WireError(f"an argument of kind {kind!r} is not one")


def outgoing(value: Any) -> dict[str, Any] | None:
    """How a returned leaf is sent: arrays as their data, anything else named by its type."""
    import jax

    if isinstance(value, jax.Array):
        if value.is_deleted():
            return {"data": np.zeros(0, np.float32), "kind": "deleted", "type": "jax.Array"}
        return {"data": np.asarray(value), "kind": "jax", "sharding": describe_sharding(value)}
    if isinstance(value, np.ndarray) and value.dtype.name in wire.DTYPES:
        return {"data": value, "kind": "np"}
    if isinstance(value, np.generic) and value.dtype.name in wire.DTYPES:
        return {"data": np.asarray(value), "kind": "npscalar"}
    return {"data": np.zeros(0, np.float32), "kind": "opaque", "type": type(value).__qualname__[:200]}


def describe_sharding(array: Any) -> dict[str, Any] | None:
    """A NamedSharding as plain data (its mesh's device ids and axes, its spec), else None."""
    from jax.sharding import NamedSharding

    sharding = array.sharding
    if not isinstance(sharding, NamedSharding) or len(sharding.mesh.devices.flat) <= 1:
        return None
    mesh = sharding.mesh
    spec = [list(p) if isinstance(p, tuple) else p for p in sharding.spec]
    return {"shape": list(mesh.devices.shape), "ids": [int(d.id) for d in mesh.devices.flat],
            "axes": [str(a) for a in mesh.axis_names], "spec": spec}


def sharding_from(data: Any) -> Any:
    """The NamedSharding `describe_sharding` described (checked, since either side may send it), or None."""
    if data is None:
        return None
    import jax
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    try:
        by_id = {d.id: d for d in jax.devices()}
        devices = np.array([by_id[int(i)] for i in data["ids"]], dtype=object).reshape(data["shape"])
        spec = PartitionSpec(*(tuple(p) if isinstance(p, list) else p for p in data["spec"]))
        return NamedSharding(Mesh(devices, tuple(str(a) for a in data["axes"])), spec)
    except (KeyError, TypeError, ValueError) as exc:
        raise wire.WireError(f"a sharding is malformed: {exc}") from None


def _raised(exc: BaseException, path: Path | None) -> dict[str, Any]:
    """An exception as data: its class names (outermost first), its text, and the learner's frames."""
    frames = learner_frames(exc.__traceback__, path)
    return {"types": [c.__name__ for c in type(exc).__mro__][:12], "text": str(exc)[:MAX_TEXT],
            "frames": [[f.filename, f.lineno or 0, f.name, (f.line or "")[:300]] for f in frames[-8:]]}
