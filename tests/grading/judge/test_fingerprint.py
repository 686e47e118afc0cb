"""A program's fingerprint: the same for one program however it was traced, run or sent; different for another."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

from course.engine.wire.jaxpr_objects import decode
from course.engine.wire.jaxprs import encode
from course.grading.judge.fingerprint import Seen, fingerprint
from course.grading.observe.calls.executions import record_runs


def _kernel(x_ref, y_ref, o_ref, acc_ref):
    """One K step of a tiled matmul."""
    @pl.when(pl.program_id(2) == 0)
    def _zero():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)
    o_ref[...] = acc_ref[...].astype(o_ref.dtype)


def _matmul(tile: int, *, k_first: bool = False):
    """A tiled matmul of (256, 256) operands at `tile` (K the last grid axis unless `k_first`)."""
    def run(x, y):
        order = (lambda k, i, j: (i, k), lambda k, i, j: (k, j), lambda k, i, j: (i, j)) if k_first else (
            lambda i, j, k: (i, k), lambda i, j, k: (k, j), lambda i, j, k: (i, j))
        n = 256 // tile
        return pl.pallas_call(
            _kernel, out_shape=jax.ShapeDtypeStruct((256, 256), x.dtype), grid=(n, n, n),
            in_specs=[pl.BlockSpec((tile, tile), order[0]), pl.BlockSpec((tile, tile), order[1])],
            out_specs=pl.BlockSpec((tile, tile), order[2]), scratch_shapes=[pltpu.VMEM((tile, tile), jnp.float32)],
        )(x, y)

    return run


X = jnp.ones((256, 256), jnp.float32)


def test_one_program_has_one_fingerprint_traced_run_or_sent() -> None:
    """Traced, traced under the grader's jit and the interpreter, run and recorded, sent and read back: one."""
    fn = _matmul(128)
    traced = jax.make_jaxpr(fn)(X, X)
    with pltpu.force_tpu_interpret_mode(pltpu.InterpretParams()):
        jitted = jax.make_jaxpr(jax.jit(fn))(X, X)
        with record_runs(programs=True) as rec:
            jax.block_until_ready(jax.jit(fn)(X, X))
    prints = {fingerprint(traced), fingerprint(jitted), fingerprint(next(r.program for r in rec.runs if not r.helper)),
              fingerprint(decode(encode(traced)))}
    assert len(prints) == 1


def test_other_blocks_another_grid_order_or_another_dataflow_differ() -> None:
    """Blocks, the order of grid axes in the index maps, and what is returned all count."""
    base = fingerprint(jax.make_jaxpr(_matmul(128))(X, X))
    assert fingerprint(jax.make_jaxpr(_matmul(64))(X, X)) != base
    assert fingerprint(jax.make_jaxpr(_matmul(128, k_first=True))(X, X)) != base
    assert fingerprint(jax.make_jaxpr(lambda a, b: (a + b, a))(X, X)) != fingerprint(
        jax.make_jaxpr(lambda a, b: (a + b, b))(X, X))


def test_how_jits_are_nested_does_not_count() -> None:
    """A jitted helper called inside is the operations it runs."""
    helper = jax.jit(lambda a, b: a * b)
    assert fingerprint(jax.make_jaxpr(lambda a, b: helper(a, b) + 1)(X, X)) == fingerprint(
        jax.make_jaxpr(lambda a, b: a * b + 1)(X, X))


def test_seen_returns_the_earlier_fingerprint_when_a_function_changes_its_program() -> None:
    """The first program of a function at some inputs is kept; the same again is fine, another is returned."""
    seen = Seen()
    assert seen.note("matmul", "f32[256,256] f32[256,256]", "a") is None
    assert seen.note("matmul", "f32[256,256] f32[256,256]", "a") is None
    assert seen.note("matmul", "bf16[256,256] bf16[256,256]", "b") is None
    assert seen.note("matmul", "f32[256,256] f32[256,256]", "c") == "a"


def test_a_constant_baked_in_is_the_same_program_compiled_again() -> None:
    """A Python number baked into the program (a static argument that changes each call) does not change what it
    computes: the compile checks judge it; an operation changed does change the fingerprint."""
    step = jax.jit(lambda s, d, k: s + d + jnp.full_like(s, k) * 0.0, static_argnums=2)
    v = jnp.ones(8)
    first, second = (fingerprint(jax.make_jaxpr(step, static_argnums=2)(v, v, k)) for k in (1, 2))
    other = fingerprint(jax.make_jaxpr(lambda s, d: s - d)(v, v))
    assert first == second != other


def test_a_checkpointed_scan_under_grad_has_a_fingerprint() -> None:
    """The gradient of a `jax.checkpoint` around a scan calls its program through `closed_call`, whose program is
    its `call_jaxpr`: walked into like any call, never a key missing."""
    def loss(w, x):
        out, _ = jax.lax.scan(lambda h, p: (jnp.tanh(h @ p), None), x, w)
        return jnp.mean(out ** 2)

    w, x = jnp.ones((3, 4, 4)), jnp.ones((2, 4))
    step = jax.value_and_grad(jax.checkpoint(loss))
    assert fingerprint(jax.make_jaxpr(step)(w, x)) == fingerprint(jax.make_jaxpr(jax.jit(step))(w, x))


_SHARD_MAP_FINGERPRINT = """
import os
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
import jax, jax.numpy as jnp
from jax.sharding import PartitionSpec as P
from course.grading.judge.fingerprint import fingerprint
mesh = jax.make_mesh((2, 4), ("x", "y"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
f = jax.shard_map(lambda b: jax.lax.psum(b.sum(), ("x", "y")), mesh=mesh, in_specs=P("x", "y"), out_specs=P())
print(fingerprint(jax.make_jaxpr(f)(jnp.zeros((4, 8)))))
"""


def test_a_programs_fingerprint_is_the_same_in_every_process() -> None:
    """A `shard_map`'s axes are a set of strings, which prints in another order under another hash seed: the
    executor and the judge must still compute one fingerprint (the judge verifies what the executor sent)."""
    import os
    import subprocess
    import sys

    printed = {subprocess.run([sys.executable, "-c", _SHARD_MAP_FINGERPRINT], capture_output=True, text=True,
                              check=True, env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout.strip()
               for seed in (1, 2, 3, 4, 5, 6)}
    assert len(printed) == 1 and len(printed.pop()) == 64
