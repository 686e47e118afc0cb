"""Tests of `judge.source`: the learner's frames and exception text in plain words."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from course.grading.judge.source import callback_error, defined_names, describe_exception, store_dtypes


def _refuse(x: np.ndarray) -> np.ndarray:
    """A host callback that fails the way the TPU interpreter does on an out-of-bounds read."""
    raise IndexError(f"Out-of-bounds block index (2, 0) for input \"x_ref\", shape {x.shape}")


def test_callback_error_finds_the_exception_raised_in_a_callback() -> None:
    """JAX's runtime error carries the callback's traceback; its last exception line is returned."""
    f = jax.jit(lambda x: jax.pure_callback(_refuse, jax.ShapeDtypeStruct(x.shape, x.dtype), x))
    with pytest.raises(Exception) as excinfo:  # noqa: PT011 - JAX's runtime error type is what we test
        jax.block_until_ready(f(jnp.ones(3)))
    assert callback_error(excinfo.value) == 'IndexError: Out-of-bounds block index (2, 0) for input "x_ref", shape (3,)'


def test_callback_error_is_none_for_ordinary_exceptions() -> None:
    """An exception that did not come through a callback has no inner cause to report."""
    assert callback_error(ValueError("ValueError: not from a callback")) is None
    assert describe_exception(ValueError("bad\nsecond line")) == "ValueError: bad"


def test_store_dtypes_reads_a_store_pallas_refuses() -> None:
    """A float32 product stored into a bfloat16 scratch fails while tracing; its dtypes are read from the error."""
    from jax.experimental import pallas as pl
    from jax.experimental.pallas import tpu as pltpu

    def kernel(x_ref, o_ref, acc_ref):
        acc_ref[...] += jnp.dot(x_ref[...], x_ref[...], preferred_element_type=jnp.float32)
        o_ref[...] = acc_ref[...]

    x = jax.ShapeDtypeStruct((128, 128), jnp.bfloat16)
    call = pl.pallas_call(kernel, out_shape=x, scratch_shapes=[pltpu.VMEM((128, 128), jnp.bfloat16)], interpret=True)
    with pytest.raises(ValueError, match="Invalid dtype") as excinfo:
        jax.make_jaxpr(call)(x)
    assert store_dtypes(excinfo.value) == ("bfloat16", "float32")
    assert store_dtypes(ValueError("Invalid shape for `swap`.")) is None


def test_describe_exception_keeps_what_a_colon_announces() -> None:
    """A first line ending in a colon is joined with the lines it announces, as JAX's shard_map errors need."""
    exc = ValueError("shard_map in_specs argument must refer to an axis marked as manual, but:\n\n"
                     "  in_specs refers to 'ring'\n\nCheck the in_specs values passed to shard_map.")
    assert describe_exception(exc) == ("ValueError: shard_map in_specs argument must refer to an axis marked as "
                                       "manual, but: in_specs refers to 'ring' Check the in_specs values passed "
                                       "to shard_map.")


def test_defined_names_are_read_from_the_graded_text(tmp_path: Path) -> None:
    """The learner's names (functions at any depth, lambdas, classes) come from the text the grading read, even
    once the file on disk has changed; a text that does not compile has none."""
    from course.engine.common.submission import remember

    path = tmp_path / "solution.py"
    graded = b"import jax\n\ndef outer(x):\n    def inner(y):\n        return y\n    return jax.jit(lambda z: z)(x)\n"
    path.write_bytes(b"def other():\n    pass\n")
    remember(path, graded)
    assert defined_names(path) == {"outer", "inner", "<lambda>"}
    remember(path, b"def broken(:\n")
    assert defined_names(path) == set()
