"""A trace crosses from executor to judge as data and is read there as JAX's own objects; hostile bytes are refused."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

from course.engine.wire import wire
from course.engine.wire.jaxpr_objects import Unsent, decode
from course.engine.wire.jaxprs import MAGIC, encode
from course.grading.observe.kernels.kernels import kernel_call_of, pallas_calls
from course.grading.observe.traces.jaxprs import equations, learner_line, region_text
from support import served


def _swap_kernel(x_ref, o_ref):
    left, right = x_ref[:, :64], x_ref[:, 64:]
    o_ref[:, :64] = right
    o_ref[:, 64:] = left


def _swap(x):
    return pl.pallas_call(_swap_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          input_output_aliases={0: 0}, interpret=True)(x)


def _tiled_kernel(x_ref, y_ref, o_ref, acc_ref):
    @pl.when(pl.program_id(2) == 0)
    def _():
        acc_ref[...] = jnp.zeros_like(acc_ref)

    acc_ref[...] += jnp.dot(x_ref[...], y_ref[...], preferred_element_type=jnp.float32)
    o_ref[...] = acc_ref[...].astype(o_ref.dtype)


def _tiled(x, y):
    return pl.pallas_call(
        _tiled_kernel, out_shape=jax.ShapeDtypeStruct((256, 256), jnp.float32), grid=(2, 2, 2),
        in_specs=[pl.BlockSpec((128, 128), lambda i, j, k: (i, k)), pl.BlockSpec((128, 128), lambda i, j, k: (k, j))],
        out_specs=pl.BlockSpec((128, 128), lambda i, j, k: (i, j)),
        scratch_shapes=[pltpu.VMEM((128, 128), jnp.float32)],
        compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel", "parallel", "arbitrary")),
        interpret=True)(x, y)


def _copy_kernel(lengths_ref, x_hbm, o_ref, buf, sem):
    n = lengths_ref[0]
    copy = pltpu.make_async_copy(x_hbm.at[pl.ds(0, 8)], buf, sem)
    copy.start()
    copy.wait()
    o_ref[...] = buf[...] * n.astype(jnp.float32)


def _copy(lengths, x):
    spec = pltpu.PrefetchScalarGridSpec(
        num_scalar_prefetch=1, grid=(1,), in_specs=[pl.BlockSpec(memory_space=pl.ANY)],
        out_specs=pl.BlockSpec((8, 128), lambda i, n: (0, 0)),
        scratch_shapes=[pltpu.VMEM((8, 128), jnp.float32), pltpu.SemaphoreType.DMA])
    return pl.pallas_call(_copy_kernel, grid_spec=spec, out_shape=jax.ShapeDtypeStruct((8, 128), jnp.float32),
                          interpret=True)(lengths, x)


def _reshaping_kernel(x_ref, o_ref):
    o_ref[...] = x_ref.reshape(8, 128)[...].reshape(o_ref.shape) * 2


def _buffered(x):
    return pl.pallas_call(
        _reshaping_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(2,),
        in_specs=[pl.BlockSpec((4, 256), lambda i: (i, 0), pipeline_mode=pl.Buffered(2))],
        out_specs=pl.BlockSpec((4, 256), lambda i: (i, 0)),
        cost_estimate=pl.CostEstimate(flops=10, transcendentals=0, bytes_accessed=100), interpret=True)(x)


@jax.jit
def _control(x):
    def body(carry, row):
        return carry + jnp.where(row > 0, row, -row).sum(), None

    total, _ = jax.lax.scan(body, 0.0, x)
    return jax.lax.cond(total > 0, lambda t: t * 2, lambda t: t, total), jax.nn.relu(x) @ x.T


def _named_tuples(a, i, img, k):
    """Operations whose parameters are named tuples (dimension numbers, a solve's jaxprs) or an enum (an FFT's)."""
    conv = jax.lax.conv_general_dilated(img, k, (1, 1), "SAME", dimension_numbers=("NCHW", "OIHW", "NCHW"))
    solved = jnp.linalg.solve(a @ a.T + 8 * jnp.eye(8), a[i].T)
    return a.at[i].add(1.0), conv, jnp.fft.rfft(a).real, solved


TRACES: dict[str, Callable[[], Any]] = {
    "aliased kernel": lambda: jax.make_jaxpr(_swap)(jnp.ones((8, 128))),
    "tiled matmul": lambda: jax.make_jaxpr(_tiled)(jnp.ones((256, 256)), jnp.ones((256, 256))),
    "dma with scalar prefetch": lambda: jax.make_jaxpr(_copy)(jnp.ones(1, jnp.int32), jnp.ones((16, 128))),
    "scan, cond and jit": lambda: jax.make_jaxpr(_control)(jnp.ones((4, 3))),
    "reshaped ref, buffered spec, cost estimate": lambda: jax.make_jaxpr(_buffered)(jnp.ones((8, 256))),
    "grad of a remat": lambda: jax.make_jaxpr(jax.grad(jax.checkpoint(lambda w: jnp.tanh(w @ w).sum())))(
        jnp.ones((4, 4))),
    "gather, scatter, conv, fft and a linear solve": lambda: jax.make_jaxpr(_named_tuples)(
        jnp.ones((8, 8)), jnp.arange(4), jnp.ones((1, 1, 8, 8)), jnp.ones((2, 1, 3, 3))),
}


def _facts(closed: Any) -> list[Any]:
    """What the graders' walks read of a trace: equations, learner lines, kernels, their refs and accesses."""
    found: list[Any] = []
    for eqn in equations(closed.jaxpr):
        found.append((eqn.primitive.name, learner_line(eqn, Path(__file__)), [str(v.aval) for v in eqn.outvars]))
        if eqn.primitive.name == "pallas_call":
            call = kernel_call_of(eqn, Path(__file__))
            found.append((call.arg_names, call.kernel_name, call.grid, call.input_output_aliases, call.num_index))
            found.extend((a.name, a.kind, region_text(a.region, a.shape), a.line) for a in call.accesses())
    return found


@pytest.mark.parametrize("name", list(TRACES))
def test_a_trace_reads_back_as_it_was_made(name: str) -> None:
    """The rebuilt trace prints as the original does, and every fact the graders read of it is the same."""
    closed = TRACES[name]()
    back = decode(encode(closed))
    assert str(back) == str(closed)
    assert _facts(back) == _facts(closed)
    # Every parameter a grader may read arrives as JAX's own object; only functions (a custom rule's) as text.
    params = [v for e in equations(back.jaxpr) for v in jax.tree_util.tree_leaves(dict(e.params))]
    assert not [v for v in params if isinstance(v, Unsent) and v.debug_info is None]
    assert any(line is not None for _, line, *_ in (f for f in _facts(back) if len(f) == 3))  # frames crossed


def test_a_kernels_types_and_memory_spaces_cross() -> None:
    """Scalar prefetch, a ref in HBM (ANY), a VMEM scratch buffer and a DMA semaphore keep their memory spaces."""
    closed = TRACES["dma with scalar prefetch"]()
    back = decode(encode(closed))
    (call,) = [kernel_call_of(e, None) for e in equations(back.jaxpr) if e.primitive.name == "pallas_call"]
    spaces = [str(getattr(v.aval, "memory_space", None)) for v in call.jaxpr.invars]
    original = [str(getattr(v.aval, "memory_space", None)) for v in TRACES["dma with scalar prefetch"]().eqns[0]
                .params["jaxpr"].invars]
    assert spaces == original and "semaphore" in str(call.jaxpr.invars[-1].aval).lower()


def test_a_matmuls_precision_crosses_as_jaxs_own() -> None:
    """`precision=HIGHEST` arrives as `lax.Precision.HIGHEST`, which the graders' messages print as JAX does."""
    closed = jax.make_jaxpr(lambda x, w: jax.lax.dot(x, w, precision=jax.lax.Precision.HIGHEST))(
        jnp.ones((4, 8), jnp.bfloat16), jnp.ones((8, 2), jnp.bfloat16))
    (dot,) = decode(encode(closed)).jaxpr.eqns
    assert all(p is jax.lax.Precision.HIGHEST for p in dot.params["precision"])


def test_a_function_in_the_parameters_crosses_as_its_text() -> None:
    """A parameter no listed class makes (here a custom rule's function) arrives as text, never as an object."""
    @jax.custom_jvp
    def f(x):
        return jnp.sin(x)

    f.defjvp(lambda primals, tangents: (f(primals[0]), jnp.cos(primals[0]) * tangents[0]))
    closed = jax.make_jaxpr(f)(1.0)
    back = decode(encode(closed))
    sent = [v for e in back.jaxpr.eqns for v in e.params.values() if isinstance(v, Unsent)]
    assert sent and all(isinstance(v.text, str) for v in sent)
    assert [e.primitive.name for e in back.jaxpr.eqns] == [e.primitive.name for e in closed.jaxpr.eqns]


def _doc(blob: bytes) -> tuple[dict[str, Any], bytes]:
    """The JSON table of an encoded trace and the array bytes after it."""
    size = int.from_bytes(blob[len(MAGIC):len(MAGIC) + 8], "big")
    return json.loads(blob[len(MAGIC) + 8:len(MAGIC) + 8 + size]), blob[len(MAGIC) + 8 + size:]


def _blob(doc: dict[str, Any], rest: bytes = b"") -> bytes:
    text = json.dumps(doc).encode()
    return MAGIC + len(text).to_bytes(8, "big") + text + rest


def _forged(change: Callable[[dict[str, Any]], None]) -> bytes:
    """A real trace with one part of its table changed as a hostile executor might."""
    doc, rest = _doc(encode(TRACES["aliased kernel"]()))
    change(doc)
    return _blob(doc, rest)


def _cycle(doc: dict[str, Any]) -> None:
    """Make the outer jaxpr's kernel hold the outer jaxpr itself."""
    text = json.dumps(doc["jaxprs"][-1])
    last = len(doc["jaxprs"]) - 1
    doc["jaxprs"][-1] = json.loads(text.replace('{"@": "j", "j": 0}', f'{{"@": "j", "j": {last}}}'))
    assert doc["jaxprs"][-1] != json.loads(text)


FORGERIES: dict[str, bytes | Callable[[], bytes]] = {
    "not a trace": b"hello",
    "cut short": lambda: encode(TRACES["aliased kernel"]())[:40],
    "not JSON": MAGIC + (5).to_bytes(8, "big") + b"{{{{{",
    "a jaxpr holding itself": lambda: _forged(_cycle),
    "a variable out of range": lambda: _forged(lambda d: d["jaxprs"][0]["i"].append(10 ** 6)),
    "an unknown tag": lambda: _forged(lambda d: d.update(root={"@": "eval", "v": "__import__('os')"})),
    "an unlisted class": lambda: _forged(lambda d: d["vars"].__setitem__(0, {"@": "o", "c": "Popen", "f": {}})),
    "a named tuple of the wrong length": lambda: _forged(
        lambda d: d.update(root={"@": "nt", "c": "GatherDimensionNumbers", "v": [1]})),
    "a named tuple of a class that is none": lambda: _forged(
        lambda d: d.update(root={"@": "nt", "c": "Precision", "v": []})),
    "a type that is no type": lambda: _forged(lambda d: d["vars"].__setitem__(0, 7)),
    "an unknown dtype": lambda: _forged(lambda d: d.update(arrays=[["object", [1], 0, 8]])),
    "array bytes missing": lambda: _forged(lambda d: d.update(arrays=[["float32", [1000], 0, 4000]])),
    "nested too deeply": lambda: _forged(lambda d: d.update(root=json.loads('{"@": "t", "v": [' * 200 + "]}" * 200))),
}


@pytest.mark.parametrize("name", list(FORGERIES))
def test_a_forged_trace_is_refused(name: str) -> None:
    """Whatever the executor sends, the judge builds nothing it does not list and says what is malformed."""
    forged = FORGERIES[name]
    with pytest.raises(wire.WireError):
        decode(forged() if callable(forged) else forged)


LEARNER = b'''
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def _kernel(x_ref, o_ref):
    o_ref[...] = x_ref[...] * 2.0


def double(x):
    return pl.pallas_call(_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), interpret=True)(x)
'''


def test_the_judge_reads_a_kernel_the_executor_traced(tmp_path: Path) -> None:
    """`pallas_calls` on the learner's function seen from the judge: traced there, its loads and stores read here,
    named with the learner's lines."""
    path = tmp_path / "learner.py"
    with served(path, LEARNER) as module:
        (call,) = pallas_calls(module.double, jax.ShapeDtypeStruct((8, 128), jnp.float32), path=path)
    assert call.kernel_name == "_kernel" and call.arg_names == ("x_ref", "o_ref")
    assert [(a.name, a.kind, a.line) for a in call.accesses()] == [("x_ref", "load", 8), ("o_ref", "store", 8)]
    assert np.prod(call.jaxpr.invars[0].aval.shape) == 8 * 128


MESHED = b'''
import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec as P


def total(x, mesh):
    summed = jax.shard_map(lambda b: jax.lax.psum(b.sum(axis=0), "d"), mesh=mesh, in_specs=P("d"), out_specs=P())
    return summed(x)


def host_read(x, mesh):
    return jnp.full((2,), float(x.sum()))
'''


def test_traced_once_is_made_there_and_read_here(tmp_path: Path) -> None:
    """`traced_once` on the learner's function seen from the judge: the executor traces, compiles and runs it with the
    mesh passed after the arrays; the judge reads the collective from the trace and compares the result itself."""
    from course.grading import CheckFailed
    from course.grading.observe.traces.collectives import jaxpr_collectives
    from course.grading.observe.traces.sharding import traced_once

    path = tmp_path / "learner.py"
    mesh = jax.make_mesh((1,), ("d",), axis_types=(jax.sharding.AxisType.Auto,))
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    with served(path, MESHED) as module:
        case = traced_once(module.total, jnp.asarray(x), static=(mesh,), name="`total`", path=path)
        assert [c.lax_name for c in jaxpr_collectives(case.jaxpr, path=path)] == ["psum"]
        assert "HloModule" in case.hlo
        np.testing.assert_array_equal(np.asarray(case.out), x.sum(axis=0))
        with pytest.raises(CheckFailed, match="host_read"):  # the executor explained the mistake; it fails here
            traced_once(module.host_read, jnp.asarray(x), static=(mesh,), name="`host_read`", path=path)


def test_a_forged_trace_fails_the_check_as_the_learners_doing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An executor whose trace is not one (its writer rebound by the learner's code) fails the judge's check with one
    sentence, as the learner's doing; nothing of it is built."""
    from course.engine.common.submission import SubmissionError
    from course.engine.wire import jaxprs

    path = tmp_path / "learner.py"
    with served(path, LEARNER) as module:
        monkeypatch.setattr(jaxprs, "encode", lambda closed: jaxprs.MAGIC + b"\xff" * 40)
        with pytest.raises(SubmissionError, match="sent an answer that is not one"):
            pallas_calls(module.double, jax.ShapeDtypeStruct((8, 128), jnp.float32), path=path)


def test_a_made_up_primitive_stays_in_its_own_trace() -> None:
    """A primitive no JAX module defines is read as a stand-in of that name, which no later trace is handed."""
    from course.engine.wire import jaxpr_objects

    def rename(doc: dict[str, Any]) -> None:
        (kernel_jaxpr, *_) = doc["jaxprs"]
        kernel_jaxpr["e"][0]["p"] = "made_up_load"

    (call,) = [e for e in decode(_forged(rename)).jaxpr.eqns if e.primitive.name == "pallas_call"]
    assert call.params["jaxpr"].eqns[0].primitive.name == "made_up_load"
    assert "made_up_load" not in jaxpr_objects._PRIMITIVES


def test_effects_cross_as_the_objects_jax_made() -> None:
    """A debug callback's, an ordered IO callback's and a ref's effects come back as JAX's own effect objects (the
    very singletons JAX compares by identity), on the jaxpr and on each equation."""
    from jax.experimental import io_callback

    def effectful(a):
        jax.debug.callback(lambda v: None, a, ordered=True)
        ref = jax.new_ref(a)
        ref[...] = io_callback(lambda v: v, jax.ShapeDtypeStruct(a.shape, a.dtype), a, ordered=True) * 2
        return ref[...]

    closed = jax.make_jaxpr(effectful)(jnp.ones(3))
    back = decode(encode(closed))
    assert back.effects == closed.effects and len(closed.effects) == 3  # the ref's own effect too
    def kinds(jaxpr: Any) -> list[set[type]]:
        return [{type(f) for f in e.effects} for e in jaxpr.eqns]

    assert kinds(back.jaxpr) == kinds(closed.jaxpr)  # a ref's read or write names its own (rebuilt) variable
