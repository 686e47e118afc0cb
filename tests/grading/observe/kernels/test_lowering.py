"""Tests of `observe.kernels.lowering`: kernels lowered for a TPU on a CPU, and what the lowering refuses."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import pytest
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

from course.engine.wire import jaxpr_objects, jaxprs
from course.grading.feedback import CheckFailed
from course.grading.observe.kernels.lowering import assert_lowers_for_tpu, lowering_words, tpu_refusals

HERE = Path(__file__)
SPEC = jax.ShapeDtypeStruct((8, 128), jnp.float32)


def flip_kernel(x_ref, o_ref):
    """Reverses each row: `rev` has no TPU lowering."""
    x = x_ref[...]
    o_ref[...] = jnp.flip(x, axis=1)


def addupdate_kernel(x_ref, o_ref):
    """Stores, then adds in place: `addupdate` has no TPU lowering."""
    o_ref[...] = x_ref[...]
    o_ref.addupdate(x_ref[...])


def hbm_read_kernel(x_ref, o_ref):
    """Reads an ANY ref as if it were in VMEM."""
    o_ref[...] = x_ref[...] * 2


def add_one_kernel(x_ref, o_ref):
    """One load, one store: lowers."""
    o_ref[...] = x_ref[...] + 1


def _line(fn: object, offset: int) -> int:
    """The line `offset` lines below the `def` of `fn`."""
    return fn.__code__.co_firstlineno + offset  # type: ignore[attr-defined]


def flipped(x: jax.Array) -> jax.Array:
    """A wrapper with no `interpret=`, as a learner's file now is."""
    return pl.pallas_call(flip_kernel, out_shape=SPEC)(x)


def test_a_flip_is_refused_in_the_lowerings_words_at_its_line() -> None:
    """`jnp.flip` in a kernel: JAX's own words, the flip's line and the `pallas_call`'s."""
    (refusal,) = tpu_refusals(flipped, SPEC, path=HERE)
    assert refusal.kernel == "flip_kernel"
    assert refusal.words == "Unimplemented primitive in Pallas TPU lowering for tc: rev."
    assert refusal.line == _line(flip_kernel, 3) and refusal.call_line == _line(flipped, 2)
    message = refusal.message("swap")
    assert "`swap` runs `flip_kernel`" in message and f"line {_line(flip_kernel, 3)} is refused" in message
    assert "`jnp.flip`" in message and "file an issue" not in message


def test_the_same_refusal_from_a_trace_sent_by_the_executor() -> None:
    """A trace read back as the judge reads it (`jaxpr_objects`) is refused the same way, at the same lines."""
    sent = jaxpr_objects.decode(jaxprs.encode(jax.make_jaxpr(flipped)(SPEC)))
    here, there = tpu_refusals(flipped, SPEC, path=HERE), tpu_refusals(sent, path=HERE)
    assert [(r.words, r.line, r.call_line) for r in there] == [(r.words, r.line, r.call_line) for r in here]


def test_what_the_strict_interpreter_runs_is_lowered_compiled() -> None:
    """Under the forced strict interpreter the trace says `interpret=...`; the lowering compiles the kernel anyway."""
    with pltpu.force_tpu_interpret_mode(pltpu.InterpretParams()):
        closed = jax.make_jaxpr(flipped)(SPEC)
    assert len(tpu_refusals(closed, path=HERE)) == 1


@pytest.mark.parametrize(("kernel", "spec", "words"), [
    (addupdate_kernel, None, "for tc: addupdate"),
    (hbm_read_kernel, pl.BlockSpec(memory_space=pl.ANY), "Loads are only allowed on VMEM and SMEM"),
])
def test_what_a_tpu_refuses_inside_a_kernel(kernel: object, spec: object, words: str) -> None:
    """An in-place add and a load from HBM are refused, each at its own line."""
    extra = {} if spec is None else {"in_specs": [spec]}
    fn = jax.jit(lambda x: pl.pallas_call(kernel, out_shape=SPEC, **extra)(x))
    (refusal,) = tpu_refusals(fn, SPEC, path=HERE)
    assert words in refusal.words
    assert refusal.line == _line(kernel, 3 if kernel is addupdate_kernel else 2)


def test_a_block_that_is_no_tpu_tile_is_refused_at_the_pallas_call() -> None:
    """Blocks of (8, 100): the lowering's rule, without its links or its dump of the index map."""
    spec = jax.ShapeDtypeStruct((16, 200), jnp.float32)
    block = pl.BlockSpec((8, 100), lambda i: (i, 0))
    fn = jax.jit(lambda x: pl.pallas_call(add_one_kernel, out_shape=spec, grid=(2,), in_specs=[block],
                                          out_specs=block)(x))
    (refusal,) = tpu_refusals(fn, spec, path=HERE)
    assert "divisible by 8 and 128" in refusal.words
    assert "index_map" not in refusal.words and "https://" not in refusal.words
    assert refusal.line is None  # no operation of the kernel: the block is the `pallas_call`'s
    assert "multiples of 8 and 128" in refusal.message("f")


def test_kernels_a_tpu_compiles_pass() -> None:
    """A plain kernel, a gridded one and one that reads HBM through a DMA all lower."""
    def dma_kernel(x_hbm, o_ref):
        pl.run_scoped(lambda buf: (pltpu.sync_copy(x_hbm, buf), o_ref.__setitem__(..., buf[...] * 2)),
                      pltpu.VMEM((8, 128), jnp.float32))

    big = jax.ShapeDtypeStruct((16, 256), jnp.float32)
    block = pl.BlockSpec((8, 128), lambda i, j: (i, j))
    gridded = jax.jit(lambda x: pl.pallas_call(add_one_kernel, out_shape=big, grid=(2, 2), in_specs=[block],
                                               out_specs=block)(x))
    assert tpu_refusals(lambda x: pl.pallas_call(add_one_kernel, out_shape=SPEC)(x), SPEC) == []
    assert tpu_refusals(gridded, big) == []
    assert tpu_refusals(lambda x: pl.pallas_call(dma_kernel, out_shape=SPEC,
                                                 in_specs=[pl.BlockSpec(memory_space=pl.ANY)])(x), SPEC) == []
    assert_lowers_for_tpu(gridded, big, name="gridded")


def test_the_check_fails_with_the_first_refusal() -> None:
    """`assert_lowers_for_tpu` fails the check with the message of the first kernel refused."""
    with pytest.raises(CheckFailed, match=r"`swap` runs `flip_kernel`.*rev"):
        assert_lowers_for_tpu(flipped, SPEC, name="swap", path=HERE)


def test_a_verification_error_keeps_only_its_cause() -> None:
    """Mosaic's verifier speaks of operations in MLIR; only the sentence about the kernel is kept."""
    raw = ("Pallas encountered an internal verification error. Please file a bug at "
           "https://github.com/jax-ml/jax/issues/new/choose. Error details: 'tpu.matmul' op Expected matmul acc "
           "to be 32-bit\n see current operation: %15 = \"tpu.matmul\"(%10, %13, %14) : (vector<128x256xbf16>)")
    assert lowering_words(ValueError(raw)) == "'tpu.matmul' op Expected matmul acc to be 32-bit"
