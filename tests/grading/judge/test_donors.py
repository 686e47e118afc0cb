"""What a jitted call reuses, read from its program texts: the same as JAX and XLA say, and no lie accepted."""

from __future__ import annotations

import types
from typing import Any

import jax
import jax.numpy as jnp
import pytest
from eight_devices import on_eight_devices

from course.grading import CheckFailed, jit_calls
from course.grading.judge.donors import parameter_shapes, program_buffers
from course.grading.observe.calls.donation import judged, record_of
from support import served

F32 = jax.ShapeDtypeStruct((64,), jnp.float32)
I32 = jax.ShapeDtypeStruct((3, 5), jnp.int32)

HELPERS = {
    "donates the first": (jax.jit(lambda s, d: s + d, donate_argnums=(0,)), (F32, F32)),
    "donates the second": (jax.jit(lambda s, d: s + d, donate_argnums=(1,)), (F32, F32)),
    "donates both, one output": (jax.jit(lambda s, d: s + d, donate_argnums=(0, 1)), (F32, F32)),
    "donates both, two outputs": (jax.jit(lambda s, d: (s + d, s - d), donate_argnums=(0, 1)), (F32, F32)),
    "float16 result": (jax.jit(lambda s, d: (s + d).astype(jnp.float16), donate_argnums=(0,)), (F32, F32)),
    "smaller result": (jax.jit(lambda s, d: (s + d)[:32], donate_argnums=(0,)), (F32, F32)),
    "donates nothing": (jax.jit(lambda s, d: s * d), (F32, F32)),
    "ints and floats": (jax.jit(lambda a, s: (a * 2, s.sum()), donate_argnums=(0, 1)), (I32, F32)),
    "a dict in and out": (jax.jit(lambda p: {"w": p["w"] + 1, "b": p["b"]}, donate_argnums=(0,)),
                          ({"w": F32, "b": I32},)),
    # JAX leaves an input the program never reads out of it, donated or not, and says nothing.
    "an input it never reads": (jax.jit(lambda s, u, d: s + d, donate_argnums=(0, 1)), (F32, I32, F32)),
}


def _calls(jitted: Any, specs: tuple[Any, ...]) -> list[Any]:
    """The jitted calls of a wrapper around `jitted`, described where the code runs."""
    return jit_calls(lambda *args: jitted(*args), *specs)


@pytest.mark.parametrize("name", HELPERS)
def test_the_texts_say_what_jax_and_xla_say(name: str) -> None:
    """Bytes reused (XLA's `alias_size_in_bytes`), the inputs reused, JAX's "not usable" warning and the
    outputs' types come out the same when read from the program texts alone."""
    jitted, specs = HELPERS[name]
    local = _calls(jitted, specs)
    assert len(local) == 1
    (read,) = judged([record_of(call) for call in local])
    (call,) = local
    assert read.alias_bytes == call.alias_bytes
    assert read.not_usable == call.not_usable
    assert read.reused == call.reused
    assert read.donated == call.donated and read.sources == call.sources and read.name == call.name
    assert [(o.shape, o.dtype) for o in jax.tree_util.tree_leaves(read.out_info)] == [
        (o.shape, o.dtype) for o in jax.tree_util.tree_leaves(call.out_info)]


def test_reuse_is_read_per_input() -> None:
    """The inputs whose buffers the compiled program writes into are named, not only counted."""
    (second,) = _calls(*HELPERS["donates the second"])
    (both,) = _calls(*HELPERS["donates both, one output"])
    assert second.reused == (1,) and second.alias_bytes == 256
    assert both.reused == (0,) and both.not_usable == ("Some donated buffers were not usable: float32[64].",)


def _record(name: str) -> dict[str, Any]:
    """The record the executor sends for one helper's call."""
    (call,) = _calls(*HELPERS[name])
    return record_of(call)


@pytest.mark.parametrize("change", [
    # a compiled text that reuses an input the call never donated
    lambda r, other: {**r, "compiled": other["compiled"]},
    # a lowered text that marks an input the call never donated
    lambda r, other: {**r, "lowered": other["lowered"]},
    # a call with one input more than its program has, every input said kept
    lambda r, other: {**r, "donated": [*r["donated"], False], "sources": [*r["sources"], [None, None, None]],
                      "kept": None},
    # a program said to leave out an input it has
    lambda r, other: {**r, "kept": [1]},
    # a program said to keep an input the call does not have
    lambda r, other: {**r, "kept": [0, 2]},
], ids=["reuse not donated", "mark not donated", "inputs miscounted", "input said left out", "kept out of range"])
def test_texts_that_contradict_the_call_fail_the_check(change: Any) -> None:
    """A record whose texts no program of that call could have (as an executor that lies would send) fails."""
    record = change(_record("donates nothing"), _record("donates the first"))
    with pytest.raises(CheckFailed, match="does not match the call"):
        judged([record])


@pytest.mark.parametrize("records", [
    "not a list", [{"name": 1}], [{"donated": ["yes"]}],
    [{"name": "f", "line": None, "defined_line": None, "donated": [True], "sources": [],  # a source short
      "lowered": "", "compiled": ""}],
])
def test_malformed_records_fail_the_check(records: Any) -> None:
    """Whatever else comes back fails the check in one sentence."""
    with pytest.raises(CheckFailed, match="came back malformed"):
        judged(records)


def test_an_input_left_out_is_named_by_its_place_in_the_call() -> None:
    """Reuse is said of the call's own inputs even when the program left one out: the third input here is the
    program's second parameter."""
    (call,) = _calls(jax.jit(lambda u, s, d: (s + d, d * 2), donate_argnums=(1, 2)), (I32, F32, F32))
    assert call.kept == (1, 2) and call.reused == (1, 2) and call.alias_bytes == 512
    (read,) = judged([record_of(call)])
    assert read.reused == (1, 2) and read.alias_bytes == 512 and read.not_usable == ()


def test_a_long_parameter_list_reads_past_hlos_index_comments() -> None:
    """HLO writes `/*index=5*/` before a sixth parameter; its type is still read (8 devices' shards, say)."""
    header = ("HloModule jit_step, input_output_alias={ {0}: (0, {}, may-alias), {1}: (5, {}, may-alias) }, "
              "entry_computation_layout={(f32[4]{0}, f32[], f32[4,4]{1,0}, f32[4]{0}, f32[], /*index=5*/f32[4,4]{1,0},"
              " f32[])->(f32[4]{0}, f32[4,4]{1,0})}, num_partitions=8")
    lowered = "func.func public @main(" + ", ".join(
        f"%arg{i}: tensor<f32>" + (" {tf.aliasing_output = 0 : i32}" if i in (0, 5) else "") for i in range(7)) + ")"
    donated = [i in (0, 5, 6) for i in range(7)]
    buffers = program_buffers(lowered, header, donated)
    assert buffers.params[5] == "f32[4,4]" and buffers.aliased == {0, 5}
    assert buffers.alias_bytes == 16 + 64
    assert buffers.not_usable(donated) == ("Some donated buffers were not usable: float32[].",)


def test_a_module_line_without_aliases_reuses_nothing() -> None:
    """A program with no `input_output_alias` reuses no input, whatever its layout."""
    header = "HloModule jit_f, entry_computation_layout={(f32[8]{0}, s32[2,3]{1,0})->(f32[8]{0}, pred[])}"
    buffers = program_buffers("func.func public @main(%arg0: tensor<8xf32>, %arg1: tensor<2x3xi32>)", header,
                              [False, False])
    assert buffers.params == ("f32[8]", "s32[2,3]") and buffers.results == ("f32[8]", "pred[]")
    assert buffers.aliased == frozenset() and buffers.alias_bytes == 0


LEARNER = b'''
import jax

_add = jax.jit(lambda state, delta: state + delta, donate_argnums=(0,))
_lost = jax.jit(lambda state, delta: (state + delta).astype("float16"), donate_argnums=(0, 1))


def update(state, delta):
    return _lost(_add(state, delta), delta)
'''


@on_eight_devices
def test_a_sharded_step_is_read_per_device() -> None:
    """On a mesh, the compiled text gives each device's shard: the bytes reused are one device's, as XLA counts
    them, and JAX's warning names the shards it could not use."""
    from jax.sharding import AxisType, NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Explicit,) * 2)
    w = jax.device_put(jnp.ones((16, 32), jnp.float32), NamedSharding(mesh, P("x", "y")))
    b = jax.device_put(jnp.ones((32,), jnp.float32), NamedSharding(mesh, P("y")))
    step = jax.jit(lambda p, g, lr: {k: p[k] - lr * g[k] for k in p}, donate_argnums=(0, 1))
    (call,) = jit_calls(lambda p, g, lr: step(p, g, lr), {"w": w, "b": b}, {"w": w * 2, "b": b * 2}, 0.5)
    (read,) = judged([record_of(call)])
    assert read.alias_bytes == call.alias_bytes == 256 + 32
    assert read.reused == (0, 1) and read.not_usable == call.not_usable
    assert read.not_usable == ("Some donated buffers were not usable: float32[8], float32[8,8].",)


def test_the_judge_reads_the_executors_programs_itself(tmp_path: Any) -> None:
    """`jit_calls` on the learner's function seen from the judge: traced in the executor, each call's texts sent,
    and what is reused read in the judge, the same as where the code runs."""
    local_module = types.ModuleType("learner")
    exec(compile(LEARNER, "learner.py", "exec"), local_module.__dict__)  # noqa: S102 - our own fixture
    local = jit_calls(local_module.update, F32, F32)
    with served(tmp_path / "learner.py", LEARNER) as module:
        far = jit_calls(module.update, F32, F32)
    assert [c.name for c in far] == ["<lambda>", "<lambda>"]
    assert [(c.alias_bytes, c.reused, c.not_usable, c.donated) for c in far] == [
        (c.alias_bytes, c.reused, c.not_usable, c.donated) for c in local]
    assert far[0].reused == (0,) and far[1].alias_bytes == 0 and far[0].line == 9


def test_parameter_shapes_are_read_from_the_compiled_text() -> None:
    """Each parameter's shape, as XLA compiled it (a scalar too); nothing from a text without a layout."""
    spec = jax.ShapeDtypeStruct((16, 64), jnp.float32)
    call = jit_calls(jax.jit(lambda x, t: x / t), spec, jax.ShapeDtypeStruct((), jnp.float32))[0]
    assert parameter_shapes(call.compiled) == ((16, 64), ())
    assert parameter_shapes("") == ()


def test_an_effect_token_is_no_input_of_the_call() -> None:
    """A program with an ordered host callback (as the TPU interpreter makes) threads a token through its first
    parameter and result; what is reused is still said of the call's own inputs, and the token never counts."""
    from jax.experimental import io_callback

    def step(s: jax.Array, d: jax.Array) -> jax.Array:
        io_callback(lambda: None, None, ordered=True)
        return s + d

    (call,) = _calls(jax.jit(step, donate_argnums=(1,)), (F32, F32))
    assert "token[]" in call.compiled.split("->")[0], call.compiled[:300]  # the effect is really in the program
    (read,) = judged([record_of(call)])
    assert read.reused == (1,) and read.alias_bytes == 256 and read.not_usable == ()
    assert [(o.shape, o.dtype) for o in read.out_info] == [((64,), jnp.float32)]
    assert parameter_shapes(call.compiled) == ((64,), (64,))


def test_every_trace_runs_the_learners_python_again() -> None:
    """Two traces of a function whose Python state changes its program (a call counter given as a static
    argument) show two programs: JAX's trace cache does not hand the first trace back for the second."""
    calls = [0]
    inner = jax.jit(lambda x, k: x + k, static_argnums=1)

    def counted(x: jax.Array) -> jax.Array:
        calls[0] += 1
        return inner(x, calls[0])

    first, second = (_one(jit_calls(counted, F32)) for _ in range(2))
    assert calls[0] == 2 and first.program != second.program
    double = jax.jit(lambda x: x * 2)  # no state: every trace shows the same program
    assert _one(jit_calls(double, F32)).program == _one(jit_calls(double, F32)).program


def _one(calls: list[Any]) -> Any:
    """The only jitted call of a trace."""
    assert len(calls) == 1
    return calls[0]
