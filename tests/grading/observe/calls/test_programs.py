"""Tests of `observe.calls.programs`: one compile per program, its memory, its size, and numbers for messages."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from course.grading.observe.calls.compiles import CompileRecorder
from course.grading.observe.calls.programs import Memory, compile_program, hlo_size, mib, over_budget, size_text


def _scan(n: int, unroll: int | bool = 1):
    """n tanh layers of (16, 64) @ (64, 64) in a scan."""
    def forward(w, x):
        return lax.scan(lambda h, wl: (jnp.tanh(h @ wl), None), x, w, unroll=unroll)[0]

    return forward, jax.ShapeDtypeStruct((n, 64, 64), jnp.float32), jax.ShapeDtypeStruct((16, 64), jnp.float32)


def test_one_compile_serves_the_analysis_and_the_run() -> None:
    """The compiled program runs on real arrays; compiling the same program again compiles nothing."""
    def double_sum(x):
        return jnp.sum(x * 2.0)

    with CompileRecorder({"double_sum"}) as rec:
        program = compile_program(double_sum, jnp.ones(8))
        again = compile_program(double_sum, jax.ShapeDtypeStruct((8,), jnp.float32))
        out = program(jnp.arange(8.0))
    assert rec.count() == 1 and again.compiled is program.compiled
    assert float(out) == 56.0 and program.name == "double_sum"


def test_temp_memory_separates_a_scan_from_unrolled_code() -> None:
    """An unrolled scan keeps a weight slice per layer: its temp bytes grow with depth, a rolled scan's do not."""
    rolled = [compile_program(*_scan(n)).memory.temp for n in (4, 8)]
    unrolled = [compile_program(*_scan(n, unroll=True)).memory.temp for n in (4, 8)]
    assert rolled[0] == rolled[1] and unrolled[1] > unrolled[0] > rolled[0]
    memory = compile_program(*_scan(4)).memory
    assert isinstance(memory, Memory) and memory.argument == 4 * 64 * 64 * 4 + 16 * 64 * 4
    assert memory.output == 16 * 64 * 4 and memory.alias == 0
    assert memory.describe().startswith(f"temp {size_text(memory.temp)}, arguments 68.0 KiB")


def test_program_size_grows_only_when_unrolled_and_cost_analysis_counts_one_trip() -> None:
    """HLO instructions stay constant for a rolled scan; `flops` counts its body once, whatever the length."""
    rolled = [compile_program(*_scan(n)) for n in (4, 8)]
    unrolled = [compile_program(*_scan(n, unroll=True)) for n in (4, 8)]
    assert rolled[0].hlo_size == rolled[1].hlo_size < unrolled[0].hlo_size < unrolled[1].hlo_size
    assert rolled[0].flops == rolled[1].flops and unrolled[1].flops > unrolled[0].flops
    assert hlo_size(rolled[0].compiled) == rolled[0].hlo_size == hlo_size(rolled[0].hlo_text)


def test_hlo_size_counts_instructions_not_headers() -> None:
    """Computation headers, metadata tables and braces are not instructions."""
    text = ("HloModule jit_f, entry_computation_layout={(f32[4]{0})->f32[4]{0}}\n\nFileNames\n1 \"a.py\"\n\n"
            "ENTRY %main.2 (x.1: f32[4]) -> f32[4] {\n  %x.1 = f32[4]{0} parameter(0)\n"
            "  ROOT %add.0 = f32[4]{0} add(%x.1, %x.1), metadata={op_name=\"x\"}\n}\n")
    assert hlo_size(text) == 2


def test_sizes_read_as_messages_quote_them() -> None:
    """Bytes in B, KiB or MiB; a budget message says over or within."""
    assert [size_text(n) for n in (512, 24708, 3_250_000)] == ["512 B", "24.1 KiB", "3.1 MiB"]
    assert mib(20 * 2**20) == "20.0 MiB"
    assert over_budget("temp", 3_250_000, 2**20) == "temp 3.1 MiB, over the 1.0 MiB budget"
    assert over_budget("temp", 1000, 2**20) == "temp 1000 B, within the 1.0 MiB budget"


def test_errors_of_the_traced_code_pass_through() -> None:
    """A function that cannot be traced raises its own error, for the grader to explain."""
    def bad(x):
        return np.asarray(x)

    try:
        compile_program(bad, jnp.ones(3))
    except jax.errors.TracerArrayConversionError:
        return
    raise AssertionError("expected the tracing error")


def test_a_trace_read_from_elsewhere_compiles_here_to_the_same_program() -> None:
    """A trace as the judge reads it (encoded where the code ran, decoded as JAX's objects, frames as plain data)
    compiles to the program `jax.jit` makes of the function: the same temp memory and size, with pytree
    arguments, a nested jit and a cond, a custom derivative, named-tuple parameters; a trace for other arguments
    is refused."""
    from course.engine.wire.jaxpr_objects import decode
    from course.engine.wire.jaxprs import encode

    @jax.jit
    def inner(w, x):
        return lax.cond(x.sum() > 0, jnp.tanh, jnp.sin, x @ w)

    def tree(p, x):
        return lax.scan(lambda h, wl: (inner(wl, h), None), x, p["w"])[0] + p["b"]

    spec = ({"w": jax.ShapeDtypeStruct((6, 64, 64), jnp.float32), "b": jax.ShapeDtypeStruct((64,), jnp.float32)},
            jax.ShapeDtypeStruct((16, 64), jnp.float32))
    def custom_rules(a, i):  # jax.nn.relu's custom derivative, a gather, a linear solve and an FFT
        square = a[:32] @ a[:32].T + 32 * jnp.eye(32)
        return jax.nn.relu(a)[i], jnp.linalg.solve(square, a[:32]), jnp.fft.rfft(a).real

    rows = (jax.ShapeDtypeStruct((64, 32), jnp.float32), jax.ShapeDtypeStruct((8,), jnp.int32))
    for fn, *args in (_scan(4), _scan(8, unroll=True), (tree, *spec), (custom_rules, *rows)):
        far = decode(encode(jax.make_jaxpr(fn)(*args)))
        here, there = compile_program(fn, *args), compile_program(far, *args)
        assert (there.memory, there.hlo_size) == (here.memory, here.hlo_size)
    with pytest.raises(ValueError, match="a trace of 2 inputs cannot be compiled for 1 arrays"):
        compile_program(decode(encode(jax.make_jaxpr(_scan(4)[0])(*_scan(4)[1:]))), _scan(4)[1])


def test_random_numbers_callbacks_and_custom_rules_compile_in_the_judge() -> None:
    """A step that draws random numbers (typed and raw keys), calls back to the host or defines its own backward
    rule compiles from its trace as it does here: the keys' types, the callbacks' effects and the primal body of
    the rule cross."""
    from course.engine.wire.jaxpr_objects import decode
    from course.engine.wire.jaxprs import encode

    @jax.custom_vjp
    def act(x):
        return jnp.sin(x)

    act.defvjp(lambda x: (jnp.sin(x), x), lambda r, g: (g * jnp.cos(r),))

    def noisy(key, a):
        drawn = jax.random.normal(jax.random.wrap_key_data(key), a.shape) + jax.random.uniform(jax.random.key(3))
        jax.debug.callback(lambda v: None, drawn, ordered=True)
        return act(a + drawn)

    args = (jax.ShapeDtypeStruct((2,), jnp.uint32), jax.ShapeDtypeStruct((8,), jnp.float32))
    there = compile_program(decode(encode(jax.make_jaxpr(noisy)(*args))), *args)
    assert there.memory == compile_program(noisy, *args).memory


def test_a_trace_whose_parameters_did_not_cross_is_the_platforms_failure() -> None:
    """A parameter that arrived as its text where lowering needs the object: the check ends as the grading's own
    failure, in words, not with the error of JAX's lowering and never as the learner's mistake."""
    from course.engine.wire.jaxpr_objects import Unsent, decode
    from course.engine.wire.jaxprs import encode
    from course.grading.feedback import PlatformFailure

    args = (jax.ShapeDtypeStruct((4, 4), jnp.float32),)
    back = decode(encode(jax.make_jaxpr(lambda a: jnp.dot(a, a, precision=jax.lax.Precision.HIGHEST))(*args)))
    (dot,) = back.jaxpr.eqns
    forged = back.replace(jaxpr=back.jaxpr.replace(eqns=[dot.replace(params={
        **dot.params, "dimension_numbers": Unsent("tuple", "(([1], [0]), ([], []))")})]))
    with pytest.raises(PlatformFailure, match="your step could not be compiled where the grader measures it"):
        compile_program(forged, *args)
