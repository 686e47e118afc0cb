"""The judge and the executor of one grading talk in framed messages of JSON and raw array bytes.

The judge (`course.engine.judge.remote`) never runs learner code; the executor (`course.engine.executor.serve`)
does, so everything the executor sends is hostile input. Nothing here unpickles, evaluates or
imports: a message is a JSON header and raw buffers, a value is a tree of None, Python scalars,
strings, slices of integers, `...`, tuples, lists, dicts and arrays whose dtype is one of a fixed
list, and every size is checked against the bytes that came before anything is built from them.

A frame: 8 bytes (the header's length, big-endian), the UTF-8 JSON header, then the buffers the
header lists under "buffers", back to back.
"""

from __future__ import annotations

import json
import socket
import struct
from collections.abc import Callable
from typing import Any

import numpy as np

MAX_HEADER = 4 << 20
MAX_BUFFERS = 1 << 30
"""At most 1 GiB of array bytes in one message: more than any check sends, less than a grading's memory."""
MAX_DEPTH = 32
DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "bfloat16",
          "float32", "float64", "complex64", "complex128")
"""The dtypes a message may carry; anything else is refused, never looked up by name."""


class WireError(Exception):
    """A message that is not one: cut short, too large, or not of the shape this protocol allows."""


def send(sock: socket.socket, header: dict[str, Any], buffers: list[bytes] = ()) -> None:  # type: ignore[assignment]
    """Send one frame: `header` (which gets the buffers' sizes) and the buffers."""
    head = json.dumps({**header, "buffers": [len(b) for b in buffers]}, allow_nan=True).encode()
    sock.sendall(struct.pack(">Q", len(head)) + head)
    for buf in buffers:
        sock.sendall(buf)


def receive(sock: socket.socket) -> tuple[dict[str, Any], list[bytes]] | None:
    """One frame, or None when the other side has closed before a frame began; WireError otherwise."""
    size = _exactly(sock, 8, allow_eof=True)
    if size is None:
        return None
    (length,) = struct.unpack(">Q", size)
    if length > MAX_HEADER:
        raise WireError(f"a header of {length} bytes is larger than {MAX_HEADER}")
    try:
        header = json.loads(_exactly(sock, length) or b"")
    except ValueError as exc:
        raise WireError(f"the header is not JSON: {exc}") from None
    sizes = header.get("buffers") if isinstance(header, dict) else None
    if not isinstance(sizes, list) or not all(isinstance(s, int) and s >= 0 for s in sizes):
        raise WireError("the header does not list its buffers")
    if sum(sizes) > MAX_BUFFERS:
        raise WireError(f"{sum(sizes)} bytes of arrays is more than {MAX_BUFFERS}")
    return header, [_exactly(sock, s) or b"" for s in sizes]


def _exactly(sock: socket.socket, n: int, allow_eof: bool = False) -> bytes | None:
    """Read exactly n bytes; None at a clean end before the first byte when `allow_eof`."""
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 22))
        if not chunk:
            if allow_eof and got == 0:
                return None
            raise WireError(f"the other side closed after {got} of {n} bytes")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def dtype(name: object) -> np.dtype:
    """The NumPy dtype called `name`, if it is one a message may carry."""
    if name not in DTYPES:
        raise WireError(f"dtype {name!r} is not one a message may carry")
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(str(name))


def dtype_of(value: Any) -> np.dtype | None:
    """The dtype `value` is, when it is one (`np.dtype('float32')`, `np.float32`, `jnp.float32`), else None."""
    if isinstance(value, np.dtype):
        return value
    if isinstance(value, type) and issubclass(value, np.generic):
        return np.dtype(value)
    if type(value).__name__ == "_ScalarMeta" and isinstance(getattr(value, "dtype", None), np.dtype):
        return value.dtype  # JAX's scalar types: `jnp.float32`
    return None


def encode(value: Any, buffers: list[bytes], array: Callable[[Any], dict[str, Any] | None], depth: int = 0,
           whole: Callable[[Any], bool] | None = None) -> Any:
    """The JSON form of `value`, its arrays' bytes appended to `buffers`; `array` turns a leaf that
    is an array (of whatever kind) into {"dtype", "shape", "data": ndarray, ...}, or None. A tuple,
    list or dict for which `whole` is true is a leaf too (an object of the learner's that is one)."""
    if depth > MAX_DEPTH:
        raise WireError("the value is nested too deeply")
    if whole is not None and isinstance(value, tuple | list | dict) and whole(value):
        return _leaf(value, buffers, array)
    if value is None or isinstance(value, bool | int | float | str):
        return {"t": "py", "v": value}
    if value is Ellipsis:
        return {"t": "ellipsis"}
    if isinstance(value, slice):
        return {"t": "slice", "v": [_bound(v) for v in (value.start, value.stop, value.step)]}
    if isinstance(value, tuple | list):
        kind = "tuple" if isinstance(value, tuple) else "list"
        return {"t": kind, "items": [encode(v, buffers, array, depth + 1, whole) for v in value]}
    if isinstance(value, dict):
        return {"t": "dict", "keys": [encode(k, buffers, array, depth + 1, whole) for k in value],
                "values": [encode(v, buffers, array, depth + 1, whole) for v in value.values()]}
    return _leaf(value, buffers, array)


def _leaf(value: Any, buffers: list[bytes], array: Callable[[Any], dict[str, Any] | None]) -> dict[str, Any]:
    """The JSON form of a leaf, as `array` describes it; its data appended to `buffers`."""
    described = array(value)
    if described is None:
        raise WireError(f"a value of type {type(value).__name__} cannot be sent")
    data = np.asarray(described.pop("data"))
    buffers.append(data.tobytes(order="C"))  # C order whatever the layout; a 0-d array stays 0-d
    return {"t": "array", "dtype": str(data.dtype), "shape": list(data.shape), "buf": len(buffers) - 1, **described}


def decode(node: Any, buffers: list[bytes], array: Callable[[np.ndarray, dict[str, Any]], Any], depth: int = 0) -> Any:
    """The value `encode` made, from hostile input: every node checked; `array` builds each array leaf
    from its checked NumPy data and its node (kind, sharding, ...)."""
    if depth > MAX_DEPTH or not isinstance(node, dict):
        raise WireError("a value is malformed or nested too deeply")
    kind = node.get("t")
    if kind == "py":
        value = node.get("v")
        if value is not None and not isinstance(value, bool | int | float | str):
            raise WireError("a scalar is not one")
        return value
    if kind == "ellipsis":
        return Ellipsis
    if kind == "slice":
        bounds = _list(node.get("v"))
        if len(bounds) != 3:
            raise WireError("a slice is not one")
        return slice(*(_bound(v) for v in bounds))
    if kind in ("tuple", "list"):
        items = [decode(v, buffers, array, depth + 1) for v in _list(node.get("items"))]
        return tuple(items) if kind == "tuple" else items
    if kind == "dict":
        keys, values = _list(node.get("keys")), _list(node.get("values"))
        if len(keys) != len(values):
            raise WireError("a dict's keys and values differ in number")
        decoded = [decode(k, buffers, array, depth + 1) for k in keys]
        if not all(isinstance(k, str | int | float | bool) or k is None for k in decoded):
            raise WireError("a dict key is not a scalar")
        return dict(zip(decoded, (decode(v, buffers, array, depth + 1) for v in values), strict=True))
    if kind == "array":
        return array(_ndarray(node, buffers), node)
    raise WireError(f"a value of kind {kind!r} is not one this protocol has")


def _bound(value: Any) -> int | None:
    """A slice's start, stop or step: an integer (a NumPy one too) or None; anything else cannot be sent."""
    if value is None or (isinstance(value, int | np.integer) and not isinstance(value, bool)):
        return None if value is None else int(value)
    raise WireError(f"a slice bound of type {type(value).__name__} cannot be sent")


def _list(value: Any) -> list[Any]:
    """`value` if it is a list, else a WireError."""
    if not isinstance(value, list):
        raise WireError("a list is not one")
    return value


def _ndarray(node: dict[str, Any], buffers: list[bytes]) -> np.ndarray:
    """The array a node describes, after checking its dtype, shape and size against its buffer."""
    kind, shape, index = dtype(node.get("dtype")), node.get("shape"), node.get("buf")
    if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                                              for d in shape):
        raise WireError("an array's shape is not one")
    if not isinstance(index, int) or not 0 <= index < len(buffers):
        raise WireError("an array points at no buffer")
    data = buffers[index]
    if len(data) != int(np.prod(shape, dtype=np.int64)) * kind.itemsize:
        raise WireError("an array's bytes do not match its shape and dtype")
    return np.frombuffer(data, dtype=kind).reshape(shape).copy()
