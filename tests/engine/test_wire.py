"""The judge's link to the executor: values cross it whole, and hostile frames are refused in one sentence."""

from __future__ import annotations

import json
import socket
import struct
import threading

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from course.engine.executor import values
from course.engine.judge import remote
from course.engine.wire import wire


def _plain(value: object) -> dict | None:
    """The judge's way of sending NumPy leaves (no JAX needed here)."""
    if isinstance(value, np.ndarray):
        return {"data": value, "kind": "np"}
    return None


def _back(data: np.ndarray, node: dict) -> np.ndarray:
    """Rebuild a NumPy leaf."""
    assert node["kind"] == "np"
    return data


def _cross(value: object) -> object:
    """Send `value` through a real socket pair and read it back."""
    a, b = socket.socketpair()
    try:
        buffers: list[bytes] = []
        node = wire.encode(value, buffers, _plain)
        sender = threading.Thread(target=wire.send, args=(a, {"value": node}, buffers))
        sender.start()
        header, got = wire.receive(b)
        sender.join()
        return wire.decode(header["value"], got, _back)
    finally:
        a.close()
        b.close()


BOUNDS = st.none() | st.integers(-2**40, 2**40)
SCALARS = (st.none() | st.booleans() | st.integers(-2**62, 2**62) | st.floats(allow_nan=False) | st.text(max_size=20)
           | st.just(Ellipsis) | st.builds(slice, BOUNDS, BOUNDS, BOUNDS))
ARRAYS = hnp.arrays(st.sampled_from([np.float32, np.int8, np.uint64, np.bool_, np.complex64, np.float16]),
                    hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5))
TREES = st.recursive(SCALARS | ARRAYS, lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner)
                     | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=12)


def _same(a: object, b: object) -> bool:
    """Equal values of the same types, arrays bit for bit."""
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, list | tuple):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@settings(max_examples=60, deadline=None)
@given(TREES)
def test_every_value_crosses_whole(value: object) -> None:
    """Any tree of scalars, strings, slices, `...`, lists, tuples, dicts and arrays comes back equal, of the same
    types (a selector such as `(..., {"dim": slice(1, None, 2)})` is one)."""
    assert _same(value, _cross(value))


def test_bfloat16_crosses() -> None:
    """bfloat16, which NumPy does not name, crosses as itself."""
    x = np.arange(6, dtype=ml_dtypes.bfloat16).reshape(2, 3)
    back = _cross(x)
    assert back.dtype == x.dtype and np.array_equal(back, x)


def _frame(header: dict, buffers: list[bytes] = ()) -> bytes:  # type: ignore[assignment]
    """A raw frame, as a hostile executor could write it."""
    head = json.dumps(header).encode()
    return struct.pack(">Q", len(head)) + head + b"".join(buffers)


def _receive(raw: bytes) -> tuple[dict, list[bytes]] | None:
    """What `wire.receive` makes of raw bytes."""
    a, b = socket.socketpair()
    try:
        a.sendall(raw)
        a.shutdown(socket.SHUT_WR)
        return wire.receive(b)
    finally:
        a.close()
        b.close()


ARRAY = {"t": "array", "dtype": "float32", "shape": [2], "buf": 0, "kind": "np"}
HOSTILE = {
    "a dtype outside the list": ({**ARRAY, "dtype": "object"}, [b"\0" * 16]),
    "a structured dtype": ({**ARRAY, "dtype": "V8"}, [b"\0" * 16]),
    "bytes that do not fit the shape": (ARRAY, [b"\0" * 12]),
    "a negative dimension": ({**ARRAY, "shape": [-2]}, [b"\0" * 8]),
    "a boolean dimension": ({**ARRAY, "shape": [True, 2]}, [b"\0" * 8]),
    "a buffer that is not there": ({**ARRAY, "buf": 3}, [b"\0" * 8]),
    "a kind of value that does not exist": ({"t": "pickle", "v": "cos\nsystem\n"}, []),
    "a scalar that is a list": ({"t": "py", "v": [1]}, []),
    "a dict with unhashable keys": ({"t": "dict", "keys": [{"t": "list", "items": []}],
                                     "values": [{"t": "py", "v": 1}]}, []),
    "nesting beyond the limit": ({"t": "list", "items": [{"t": "list", "items": []}]}, []),
    "a slice of strings": ({"t": "slice", "v": ["a", None, None]}, []),
    "a slice of booleans": ({"t": "slice", "v": [True, None, None]}, []),
    "a slice of two bounds": ({"t": "slice", "v": [1, 2]}, []),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_values_are_refused(case: str) -> None:
    """Each malformed value raises WireError: nothing is built from a node that does not check out."""
    node, buffers = HOSTILE[case]
    if case == "nesting beyond the limit":
        for _ in range(wire.MAX_DEPTH + 2):
            node = {"t": "list", "items": [node]}
    with pytest.raises(wire.WireError):
        wire.decode(node, buffers, _back)


def test_hostile_frames_are_refused() -> None:
    """A header too large, cut short, not JSON, or whose buffers are not listed, or too large, is refused."""
    with pytest.raises(wire.WireError, match="larger"):
        _receive(struct.pack(">Q", wire.MAX_HEADER + 1))
    with pytest.raises(wire.WireError, match="closed after"):
        _receive(_frame({"buffers": [8]}) + b"\0" * 3)
    with pytest.raises(wire.WireError, match="not JSON"):
        _receive(struct.pack(">Q", 3) + b"{no")
    with pytest.raises(wire.WireError, match="buffers"):
        _receive(_frame({"buffers": "all"}))
    with pytest.raises(wire.WireError, match="more than"):
        _receive(_frame({"buffers": [wire.MAX_BUFFERS, 1]}))
    assert _receive(b"") is None  # a clean end before a frame: the executor went away


def test_an_answer_that_is_no_answer_means_the_executor_is_gone() -> None:
    """The judge takes a frame without a boolean `ok`, or a closed link, as the executor gone: the check
    fails saying so (a SubmissionError, the learner's doing), and every later request too."""
    a, b = socket.socketpair()
    link = remote.Link(a)
    replier = threading.Thread(target=lambda: (wire.receive(b), wire.send(b, {"ok": "yes"})))
    replier.start()
    with pytest.raises(remote.ExecutorGone, match="ended during this check"):
        link.ask({"op": "load"})
    replier.join()
    with pytest.raises(remote.ExecutorGone):
        link.ask({"op": "load"})
    b.close()
    link.done()


def test_a_learners_exception_is_raised_as_its_builtin_class() -> None:
    """What the learner's code raised comes back as the same built-in class, named as theirs, with its text."""
    header = {"ok": False, "error": {"types": ["JaxRuntimeError", "RuntimeError", "Exception"], "text": "boom",
                                     "frames": [["/x/f.py", 3, "f", "return 1 / 0"]]}}
    with pytest.raises(RuntimeError, match="boom") as info:
        remote.raise_remote(header, remote.Path("/x/f.py"))
    assert type(info.value).__name__ == "JaxRuntimeError"
    from course.grading.judge.source import learner_location

    assert learner_location(info.value.__traceback__, remote.Path("/x/f.py")) == " at f.py line 3: `return 1 / 0`"
    odd = {"ok": False, "error": {"types": ["MyError", "Exception"], "text": "mine", "frames": []}}
    with pytest.raises(remote.LearnerRaised, match="mine"):
        remote.raise_remote(odd, remote.Path("/x/f.py"))


def test_an_output_that_is_no_array_comes_back_named() -> None:
    """A returned object the link cannot carry (a function, a class) comes back as its type's name only."""
    sent = values.outgoing(lambda: 1)
    assert sent is not None and sent["kind"] == "opaque" and sent["type"] == "function"
