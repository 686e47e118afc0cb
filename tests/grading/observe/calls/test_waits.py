"""Tests of `observe.calls.waits`: the gate holds arrays back, waits are noted on their line, the clock sees calls."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from course.grading.observe.calls.waits import Gate, TimingLog, WaitRecorder

LEARNER = '''
import jax
import jax.numpy as jnp
import numpy as np


def reads(x):
    y = x * 2
    return float(y[0])


def converts(x):
    return np.asarray(x + 1)


def indexes(x):
    return x[1] + 0


def polls(x):
    y = x + 1
    while not y.is_ready():
        pass
    return y


def waits_on_tree(x):
    return jax.block_until_ready({"y": x - 1})
'''


@pytest.fixture(scope="module")
def gate() -> Gate:
    """A short gate: a tenth of a second of device work."""
    return Gate(0.1)


def _module(tmp_path: Path) -> ModuleType:
    """The learner-like file above, imported from its own path."""
    path = tmp_path / "learner.py"
    path.write_text(LEARNER)
    spec = importlib.util.spec_from_file_location("learner_waits", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_gate_holds_copies_back_and_keeps_their_values(gate: Gate) -> None:
    """Held arrays equal their inputs, are not ready when hold returns, and are once the work is done."""
    tree = {"x": jnp.arange(6.0).reshape(2, 3), "n": jnp.arange(3)}
    held = gate.hold(tree, 2)
    assert not held["x"].is_ready()
    jax.block_until_ready(held)
    np.testing.assert_array_equal(held["x"], tree["x"])
    assert held["n"].dtype == tree["n"].dtype and gate.steps >= 16


def test_waits_are_noted_on_the_learner_line_with_whether_they_waited(gate: Gate, tmp_path: Path) -> None:
    """float() of a pending value is a wait at its line; JAX's own np.asarray calls while indexing are not."""
    learner = _module(tmp_path)
    learner.reads(jnp.ones(3))  # compiles the eager operations, which would outlast the gate
    with WaitRecorder(learner.__file__, (vars(learner),)) as waits:
        learner.reads(gate.hold(jnp.ones(3), 3))
        learner.indexes(jnp.ones(3))
    (first,) = waits.waits
    assert (first.what, first.line, first.pending, first.polling) == ("reads its value", 9, True, False)
    assert waits.first() == first


def test_numpy_reads_polling_and_tree_waits_are_noted(gate: Gate, tmp_path: Path) -> None:
    """np.asarray, a busy loop on is_ready and jax.block_until_ready of a pytree each name their line."""
    learner = _module(tmp_path)
    learner.polls(jnp.ones(2))
    with WaitRecorder(learner.__file__, (vars(learner),)) as waits:
        learner.converts(jnp.ones(2))
        learner.polls(gate.hold(jnp.ones(2), 3))
        learner.waits_on_tree(jnp.ones(2))
    lines = {(w.what, w.line) for w in waits.waits}
    assert {("np.asarray", 13), ("is_ready", 22), ("jax.block_until_ready", 28)} <= lines
    poll = next(w for w in waits.waits if w.polling)
    assert poll.pending and waits.polled_again(poll)


def test_the_patches_are_put_back() -> None:
    """After the block, JAX's and NumPy's functions are their own again."""
    from jax._src.array import ArrayImpl

    before = (ArrayImpl.__dict__["_value"], ArrayImpl.is_ready, jax.block_until_ready, np.asarray)
    with WaitRecorder(__file__):
        assert np.asarray is not before[3]
    assert (ArrayImpl.__dict__["_value"], ArrayImpl.is_ready, jax.block_until_ready, np.asarray) == before


def test_clock_readings_see_pending_calls_and_count_the_timed_ones(gate: Gate) -> None:
    """A reading right after a dispatch sees it pending; after a wait, none; calls between readings are counted."""
    arg = jnp.ones(4)
    log = TimingLog()
    timed = log.wrap(lambda a: gate.hold(a, 3))  # each call: three tenths of a second of device work
    jax.block_until_ready(timed(arg))
    log.clock()
    outs = [timed(arg) for _ in range(2)]
    log.clock()
    jax.block_until_ready(outs)
    log.clock()
    first, early, late = log.reads
    assert (first.calls_returned, first.pending, first.warmup_pending) == (1, 0, False)
    assert early.pending >= 1 and late.pending == 0 and log.calls_between(first, late) == 2
