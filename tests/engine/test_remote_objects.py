"""Objects of the learner's code seen from the judge: held by the executor, used through the link, never run here."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

from course.engine.judge import link, proxies, remote
from course.engine.wire import wire
from course.grading.judge.source import learner_location, raised_in
from support import served

# A view over a jax.Ref, in the style of the `slice_ref` exercise: methods that return new views,
# properties, items read and written, an object passed back to a module function, a callable.
LEARNER = b'''from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np


class View:
    def __init__(self, ref, rows):
        self.ref, self.rows = ref, rows

    def slice(self, sel):
        return View(self.ref, range(len(self.ref[...]))[sel["row"]] if isinstance(sel, dict) else self.rows[sel])

    @property
    def shape(self):
        return (len(self.rows), 3)

    @property
    def dtype(self):
        return jnp.float32

    def __getitem__(self, key):
        rows = self.ref[...][np.asarray(self.rows, dtype=np.int32)]
        return rows[key]

    def __setitem__(self, key, value):
        self.ref[np.asarray(self.rows, dtype=np.int32)[key]] = value

    def broken(self):
        return 1 / 0

    def itself(self):
        return self


class Pair(NamedTuple):
    first: object
    second: object


class Window(NamedTuple):
    ref: object
    start: int

    def value(self):
        return self.ref[...][self.start:]


def pair(x):
    return Pair(x, x + 1)


def window(data, start):
    return Window(jax.new_ref(data), start)


def new_ref(data):
    return View(jax.new_ref(data), range(data.shape[0]))


def freeze(view):
    return view.ref[...]


def adder(n):
    return lambda x: x + n


def cube(x, y):
    return x ** 3 * y
'''


@pytest.fixture
def submission(tmp_path: Path) -> Iterator[remote.RemoteModule]:
    """The learner's module above, served by an executor in a thread, as a judge's check sees it."""
    with served(tmp_path / "learner.py", LEARNER) as module:
        yield module


def _data() -> np.ndarray:
    """Six rows of three distinct numbers."""
    return np.arange(18, dtype=np.float32).reshape(6, 3)


def test_an_object_is_held_there_and_used_here(submission: remote.RemoteModule) -> None:
    """A returned view stays in the executor: its methods return views, its properties and items arrive as values."""
    r = submission.new_ref(jnp.asarray(_data()))
    assert isinstance(r, proxies.RemoteObject) and repr(r) == "<View object>"
    view = r.slice({"row": slice(1, None, 2)}).slice(slice(None, None, -1))
    assert view.shape == (3, 3) and type(view.shape) is tuple
    assert np.dtype(view.dtype) == np.float32
    np.testing.assert_array_equal(np.asarray(view[...]), _data()[[5, 3, 1]])
    np.testing.assert_array_equal(np.asarray(view[1, ...]), _data()[3])


def test_the_same_object_is_the_same_here(submission: remote.RemoteModule) -> None:
    """An object that comes back twice is one object here too, of a class named as the learner's."""
    r = submission.new_ref(jnp.asarray(_data()))
    assert r.itself() is r and r.slice(slice(1, 2)) is not r
    assert type(r).__name__ == "View" and isinstance(r, proxies.RemoteObject)


def test_a_write_through_an_object_changes_what_it_holds(submission: remote.RemoteModule) -> None:
    """An item written through a held view lands in the learner's buffer, read back by passing the view itself."""
    r = submission.new_ref(jnp.asarray(_data()))
    r.slice({"row": slice(2, 4)})[0] = jnp.full((3,), -1.0, jnp.float32)
    want = _data()
    want[2] = -1.0
    np.testing.assert_array_equal(np.asarray(submission.freeze(r)), want)


def test_what_an_object_raises_is_raised_here_with_the_learners_line(submission: remote.RemoteModule) -> None:
    """A method that raises: the same built-in class here, pointing at the learner's line; a missing attribute too."""
    r = submission.new_ref(jnp.asarray(_data()))
    with pytest.raises(ZeroDivisionError) as info:
        r.broken()
    where = learner_location(info.value.__traceback__, Path(submission.__file__ or ""))
    assert where == " at learner.py line 31: `return 1 / 0`", where
    assert raised_in(info.value) == "broken"  # where it was raised there, not where it was raised again here
    with pytest.raises(AttributeError):
        _ = r.no_such_attribute


def test_a_namedtuple_crosses_as_data_unless_it_has_methods(submission: remote.RemoteModule) -> None:
    """A record (a NamedTuple of values) arrives as a tuple of its values; one with methods of its own is an
    object the executor holds, whose methods run there."""
    first, second = submission.pair(np.float32(1.0))
    assert (float(first), float(second)) == (1.0, 2.0)
    view = submission.window(jnp.arange(5.0), 2)
    assert type(view).__name__ == "Window" and view.start == 2
    np.testing.assert_array_equal(np.asarray(view.value()), [2.0, 3.0, 4.0])


def test_a_held_objects_refs_are_read_there_from_the_refs_themselves(submission: remote.RemoteModule) -> None:
    """`ref_leaves` of a held object: its pytree leaves, each `jax.Ref` read there from the ref, as it reads a
    local object; no learner method is called for it."""
    import jax

    from course.grading import ref_leaves

    held = ref_leaves(submission.window(jnp.arange(4.0), 1))
    local = ref_leaves((jax.new_ref(jnp.arange(4.0)), 1))
    for got in (held, local):
        assert [ref for ref, _ in got] == [True, False] and got[1][1] == 1
        np.testing.assert_array_equal(np.asarray(got[0][1]), [0.0, 1.0, 2.0, 3.0])


def test_a_returned_callable_is_called_there(submission: remote.RemoteModule) -> None:
    """A function the learner's code returns runs in the executor when called here."""
    add_two = submission.adder(2)
    assert float(add_two(np.float32(3.0))) == 5.0


def test_an_object_the_executor_never_gave_is_refused(submission: remote.RemoteModule) -> None:
    """A forged handle is no object: the request fails, and nothing there is touched. Only the judge's machinery
    makes a request, so the failure is the platform's, never the learner's."""
    from course.engine.common.submission import PlatformFailure

    forged = proxies.RemoteObject(submission._link, 10_000, "View", Path("learner.py"))
    with pytest.raises(PlatformFailure, match="never given"):
        _ = forged.shape
    with pytest.raises(PlatformFailure, match="never given"):
        submission.freeze(forged)


def test_a_dtype_crosses_as_a_dtype() -> None:
    """`np.float32`, `jnp.bfloat16` and `np.dtype('int8')` arrive as NumPy dtypes; an unlisted one as an object."""
    from course.engine.executor import values

    for kind, want in ((np.float32, "float32"), (jnp.bfloat16, "bfloat16"), (np.dtype("int8"), "int8")):
        buffers: list[bytes] = []
        got = wire.decode(wire.encode(kind, buffers, values.outgoing), buffers, link._returned)
        assert isinstance(got, np.dtype) and got.name == want
    buffers = []
    odd = wire.decode(wire.encode(np.dtype("U3"), buffers, values.outgoing), buffers, link._returned)
    assert isinstance(odd, remote.Opaque)


def test_a_gradient_is_taken_there(submission: remote.RemoteModule) -> None:
    """`grad_of_sum` of a learner's function in a judge's check: differentiated and run there, the same gradients
    as here; argument numbers that are not the call's are refused, as the check's (the course's) mistake."""
    from course.engine.common.submission import PlatformFailure
    from course.grading import grad_of_sum

    x, y = jnp.asarray([1.0, 2.0]), jnp.asarray([3.0, 4.0])
    dx, dy = grad_of_sum(submission.cube, x, y, argnums=(0, 1))
    np.testing.assert_allclose(np.asarray(dx), [9.0, 48.0])
    np.testing.assert_allclose(np.asarray(dy), [1.0, 8.0])
    (here,) = grad_of_sum(lambda a, b: a ** 3 * b, x, y, argnums=(0,))
    np.testing.assert_allclose(np.asarray(here), np.asarray(dx))
    with pytest.raises(PlatformFailure, match="gradient's arguments are malformed"):
        grad_of_sum(submission.cube, x, y, argnums=(2,))


def test_made_up_class_names_do_not_pile_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """An executor that names a new class for every object gets plain stand-ins past a bound: the judge's
    memory does not grow with what a hostile answer makes up."""
    monkeypatch.setattr(proxies, "_KINDS", {})  # a judge's own table, empty as at its start
    near, far = socket.socketpair()
    try:
        link = remote.Link(near)
        rebuild = proxies._returning(link, Path("learner.py"))
        made = [rebuild(np.zeros(0, np.float32), {"kind": "handle", "id": i, "type": f"Made{i}"})
                for i in range(proxies.MAX_KINDS + 50)]
        assert len(proxies._KINDS) <= proxies.MAX_KINDS
        assert type(made[-1]) is proxies.RemoteObject and made[-1].type_name == f"Made{proxies.MAX_KINDS + 49}"
    finally:
        near.close()
        far.close()
