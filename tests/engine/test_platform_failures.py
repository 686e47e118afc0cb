"""A failure of the course's own machinery between judge and executor is the platform's error, never "your code
raised": sending a check's arguments, reading them in the executor, sending back what the learner's code returned,
and reading that in the judge. What the learner's code itself raised stays theirs."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

from course.engine.common import submission
from course.engine.common.submission import PlatformFailure, describe
from course.engine.wire import jaxprs
from course.grading.observe.kernels.kernels import pallas_calls
from support import served

LEARNER = b'''
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def _kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...] * 2.0


def double(x):
    return pl.pallas_call(_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), interpret=True)(x)


def broken(x):
    return {}["missing"]
'''
SPEC = jax.ShapeDtypeStruct((8, 128), jnp.float32)


def _verdict(exc: BaseException, path: Path) -> tuple[str, str]:
    """How the plugin reports a check that raised `exc` while it ran."""
    return describe(exc, path, "call")


def test_the_trace_writer_failing_is_the_platforms_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The executor's trace writer raising (as JAX's spec did once, for an unreduced sharding) is an error of the
    grading, said so, and never laid at the learner's code."""
    def refuses(closed: object) -> bytes:
        raise ValueError("Using *pspec is dangerous when PartitionSpec has non-empty unreduced/reduced set")

    path = tmp_path / "learner.py"
    with served(path, LEARNER) as module:
        monkeypatch.setattr(jaxprs, "encode", refuses)
        with pytest.raises(PlatformFailure) as caught:
            pallas_calls(module.double, SPEC, path=path)
    status, message = _verdict(caught.value, path)
    assert status == "error" and "your code raised" not in message and "reinstall" not in message
    assert "sending back what your code returned" in message and "ValueError" in message


def test_the_judges_reader_failing_is_the_platforms_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The judge's trace reader raising on a trace that passed its checks is the platform's failure too."""
    from course.engine.wire import jaxpr_objects

    def breaks(blob: bytes) -> object:
        raise TypeError("a reader's own bug")

    path = tmp_path / "learner.py"
    with served(path, LEARNER) as module:
        monkeypatch.setattr(jaxpr_objects, "decode", breaks)
        with pytest.raises(PlatformFailure, match="could not read what the process running your code sent"):
            pallas_calls(module.double, SPEC, path=path)


def test_an_argument_the_link_cannot_carry_is_the_platforms_error(tmp_path: Path) -> None:
    """A check that passes the learner's function a value the link does not carry fails as the course's doing."""
    path = tmp_path / "learner.py"
    with served(path, LEARNER) as module, pytest.raises(PlatformFailure) as caught:
        module.double(object())
    status, message = _verdict(caught.value, path)
    assert status == "error" and "could not send the check's arguments" in message


def test_what_the_learners_code_raises_stays_theirs(tmp_path: Path) -> None:
    """A KeyError raised by the learner's function is still their failure, with their line."""
    path = tmp_path / "learner.py"
    with served(path, LEARNER) as module, pytest.raises(KeyError) as caught:
        module.broken(jnp.ones(2))
    status, message = _verdict(caught.value, path)
    assert status == "failed" and message.startswith("your code raised KeyError") and "line 16" in message
    assert not isinstance(caught.value, submission.PlatformFailure)
