"""What crosses the link between a judge and its executor comes out as it went in: scalars, meshes."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import jax
import numpy as np
from jax.sharding import AxisType

from course.engine.executor import serve, values
from course.engine.judge import link, proxies, remote
from course.engine.wire import wire
from course.grading import runs_here


def _returned(value: Any) -> Any:
    """`value` as the learner's code returns it, rebuilt as the judge sees it."""
    buffers: list[bytes] = []
    return wire.decode(wire.encode(value, buffers, values.outgoing), buffers, link._returned)


def _argument(value: Any) -> Any:
    """`value` as a judge's check passes it, rebuilt as the learner's code receives it."""
    buffers: list[bytes] = []
    return wire.decode(wire.encode(value, buffers, proxies._sent), buffers, values.incoming)


def test_a_scalar_stays_a_scalar() -> None:
    """A 0-d array comes back 0-d, as a jax.Array, a NumPy array and a NumPy scalar."""
    got = _returned((jax.numpy.float32(2.5), np.asarray(3.0), np.int32(4)))
    assert [np.shape(v) for v in got] == [(), (), ()]
    assert float(got[0]) == 2.5 and isinstance(got[0], jax.Array)
    assert isinstance(got[2], np.integer) and got[2] == 4


def test_a_mesh_crosses_with_its_axis_types() -> None:
    """A Mesh passed or returned arrives equal, its Explicit axes still Explicit."""
    mesh = jax.make_mesh((1,), ("x",), axis_types=(AxisType.Explicit,))
    for crossed in (_argument(mesh), _returned(mesh)):
        assert isinstance(crossed, jax.sharding.Mesh)
        assert crossed == mesh and crossed.axis_types == (AxisType.Explicit,)


def test_a_judges_function_does_not_run_here() -> None:
    """`runs_here` is False for a judge's view of a learner's function, True for a function of this process."""
    near, far = socket.socketpair()
    try:
        assert not runs_here(proxies.RemoteFunction(remote.Link(near), "matmul", Path("tiled_matmul.py")))
        assert runs_here(np.matmul)
    finally:
        near.close()
        far.close()


def test_the_executor_answers_until_the_judge_is_past_its_next_check(tmp_path: Path) -> None:
    """Turns in the grader's order: the executor answers until the judge starts a check after its own,
    does not wait again for a judge already past the next one, and a malformed note ends the service."""
    near, far = socket.socketpair()
    executor = serve.Executor(far, tmp_path / "missing.py", None)
    try:
        wire.send(near, {"op": "at", "index": 0})
        wire.send(near, {"op": "at", "index": 2})
        executor.serve(until=1)  # returns at the note of check 2, past the executor's check 1
        assert executor.judge_at == 2 and not executor.closed
        executor.serve(until=1)  # the judge is already past it: nothing is read, nothing waits
        wire.send(near, {"op": "at", "index": True})
        executor.serve(until=3)
        assert executor.closed
    finally:
        near.close()
        executor.close()
