"""The parts of an observation that read JAX's own words: cache-miss explanations, HLO text, example calls, listings."""

from __future__ import annotations

import types
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from course import ui
from course.errors import RegistryError
from course.grading.inspect import SECTIONS, calls, compiles, hlo
from course.grading.inspect.listing import listing
from course.grading.inspect.report import describe_error
from course.ui.inspection_kernels import kernels

STATIC_MISS = """TRACING CACHE MISS at /ws/compile_budget.py:25 (scaled_softmax):
  for _softmax defined at /ws/compile_budget.py:14
  all previously seen cache keys differ. For the closest previous key:
  different input pytree:
  * at input path [1]['temperature'], now <class 'jax._src.tree_util.Static'> with pytree metadata Static(val=2.0) \
and before <class 'jax._src.tree_util.Static'> with pytree metadata Static(val=1.0), so the pytree node metadata does \
not match"""
WEAK_MISS = """TRACING CACHE MISS at /ws/compile_budget.py:21 (scaled_softmax):
  for _softmax defined at /ws/compile_budget.py:12
  all previously seen cache keys differ. For the closest previous key:
  different input types:
  * at t, now f32[]{weak_type=False} and before f32[]{weak_type=True}https://docs.jax.dev/en/latest/type_promotion.html"""
NEW_MISS = """TRACING CACHE MISS at /ws/f.py:16 (scaled_softmax):
  never seen function:
    <lambda> id=140 defined at /ws/f.py:16
  but seen another function defined on the same line; maybe the function is
  being re-defined repeatedly, preventing caching?"""


def test_a_static_value_miss_names_the_argument_and_both_values() -> None:
    """A static argument's new value reads as such, under the argument's own name."""
    miss = compiles.parse_miss(STATIC_MISS)
    assert miss is not None and (miss.function, miss.defined_line, miss.kind) == ("_softmax", 14, "tree")
    assert miss.diffs == [{"what": "static value", "at": "temperature", "now": "2.0", "before": "1.0"}]


def test_a_weak_type_miss_is_told_apart_from_a_dtype_change() -> None:
    """Weak and strong float32 differ only in their weak-type flag; JAX's link is dropped."""
    miss = compiles.parse_miss(WEAK_MISS)
    assert miss is not None and miss.diffs == [
        {"what": "weak type", "at": "t", "now": "f32[]{weak_type=False}", "before": "f32[]{weak_type=True}"}]
    dtype = compiles.parse_miss(WEAK_MISS.replace("f32[]{weak_type=False}", "i32[]").replace("{weak_type=True}", ""))
    assert dtype is not None and dtype.diffs[0]["what"] == "dtype"


def test_a_function_made_again_on_every_call_is_a_rebuilt_jit() -> None:
    """A second "never seen" of a function defined on the same line means a jit built per call."""
    first = compiles.parse_miss(NEW_MISS.split("\n  but seen")[0])
    again = compiles.parse_miss(NEW_MISS)
    assert first is not None and again is not None and again.redefined
    seen: set = set()
    assert compiles.reasons(["jit(<lambda>)"], [first], seen)[0]["why"] == "new"
    assert compiles.reasons(["jit(<lambda>)"], [again], seen)[0]["why"] == "rebuilt"
    assert compiles.reasons(["jit(other)"], [], seen)[0]["why"] == "unexplained"
    assert compiles.parse_miss("a warning about something else") is None


HLO = """HloModule jit_f, entry_computation_layout={(f32[4,4]{1,0})->f32[]}

%region_0.2 (a: f32[], b: f32[]) -> f32[] {
  ROOT %add.1 = f32[] add(%a, %b)
}

%body.3 (p: (s32[], f32[8])) -> (s32[], f32[8]) {
  %gte = f32[8]{0} get-tuple-element(%p), index=1
  %collective-permute.1 = f32[8]{0} collective-permute(%gte), channel_id=2, source_target_pairs={{0,1},{1,0}}
}

ENTRY %main.4 (x: f32[4,4]) -> f32[] {
  %x = f32[4,4]{1,0} parameter(0)
  %wrapped_reduce = f32[] fusion(%x), kind=kLoop, calls=%fused
  %psum.7 = f32[] all-reduce(%wrapped_reduce), channel_id=1, replica_groups={{0,4},{1,5}}, to_apply=%region_0.2, \
metadata={op_name="jit(f)/shard_map/psum" stack_frame_id=8}
  %w = (s32[], f32[8]{0}) while(%t), condition=%cond.5, body=%body.3
  ROOT %ag = (f32[16,32]{1,0}, f32[32]{0}) all-gather(%x, %x), dimensions={0}, replica_groups=[2,4]<=[8]
}"""


def test_hlo_collectives_carry_sizes_groups_origin_and_loops() -> None:
    """Each collective: operand types and bytes, who exchanges with whom, the jaxpr primitive, a loop around it."""
    found = hlo.collectives(HLO)
    assert [c["op"] for c in found] == ["collective-permute", "all-reduce", "all-gather"]
    permute, reduce, gather = found
    assert permute["in_loop"] and permute["groups"] == "{{0,1},{1,0}}" and permute["bytes"] == 32
    assert (reduce["operands"], reduce["bytes"], reduce["groups"], reduce["from"]) == (["f32[]"], 4, "{{0,4},{1,5}}",
                                                                                       "psum")
    assert gather["result"] == "(f32[16,32], f32[32])" and gather["bytes"] == 128 and not gather["in_loop"]
    assert hlo.type_bytes("(bf16[2,3]{1,0}, pred[4])") == 16


def learner(tmp_path, source: str) -> types.ModuleType:
    """A learner's module made from `source`, with its file on disk."""
    path = tmp_path / "mine.py"
    path.write_text(source)
    module = types.ModuleType("mine")
    module.__file__ = str(path)
    exec(compile(source, str(path), "exec"), module.__dict__)  # noqa: S102 - a learner's file
    return module


def test_a_call_binds_its_arguments_to_the_parameters_names(tmp_path) -> None:
    """`f(a, b, k=c)` calls the learner's f on the values, named after f's own parameters."""
    module = learner(tmp_path, "def step(state, delta, *, scale=1.0):\n    return state * scale + delta\n")
    (made,) = calls.make_calls(["step(f32(4), jnp.ones(4), scale=2.0)"], "", module)
    assert isinstance(made, calls.Call) and made.names == ("state", "delta", "scale")
    fn, arrays, names = made.traced()
    assert names == ["state", "delta"] and len(arrays) == 2
    np.testing.assert_allclose(fn(*arrays), made.run())


def test_any_other_line_is_a_function_of_the_setups_names(tmp_path) -> None:
    """A read or a write of a setup's value traces as a function of that value."""
    module = learner(tmp_path, "X = 1\n")
    read, write = calls.make_calls(["r[1:3]", "r[0] = 5.0"], "r = jax.new_ref(jnp.zeros(4))", module)
    assert isinstance(read, calls.Call) and read.names == ("r",) and calls.is_data(read.args[0])
    assert read.run().shape == (2,)
    assert isinstance(write, calls.Call) and write.run() is None and float(write.args[0][0]) == 5.0


def test_a_setup_the_learners_code_breaks_names_their_line(tmp_path) -> None:
    """The learner's exception in the setup becomes the call's error, with their line."""
    module = learner(tmp_path, "def place(x):\n    raise ValueError('no mesh')\n")
    (made,) = calls.make_calls(["f(x)"], "x = place(f32(2))", module)
    assert isinstance(made, calls.CallError)
    error = describe_error(made, tmp_path / "mine.py")
    assert error["yours"] and error["line"] == 2 and "ValueError: no mesh" in error["message"]
    assert error["where"].startswith("mine.py line 2")


def test_a_jitted_lambda_is_shown_with_its_own_line(tmp_path) -> None:
    """The donation section points a lambda's jit at the lambda's line as well as at its call, and quotes both."""
    from course.grading.inspect import donation
    from course.ui.inspection import donation as draw

    source = "import jax\n\nstep = jax.jit(lambda s, d: s + d)\n\n\ndef update(s, d):\n    return step(s, d)\n"
    module = learner(tmp_path, source)
    (made,) = calls.make_calls(["update(f32(4), f32(4))"], "", module)
    (report,) = donation.observe([made], module, tmp_path / "mine.py")
    (jit,) = report["jits"]
    assert (jit["name"], jit["line"], jit["defined_line"]) == ("<lambda>", 7, 3)
    assert sorted(report["source"]) == ["3", "7"]
    with ui.out.capture() as shown:
        draw(report)
    assert "jit <lambda> (line 3), called at line 7" in " ".join(shown.get().split())


def test_the_same_file_gets_the_same_inputs(tmp_path) -> None:
    """Inputs are random but seeded, so two inspections of one file read alike."""
    module = learner(tmp_path, "def ident(x):\n    return x\n")
    first, second = (calls.make_calls(["ident(f32(3))"], "", module)[0] for _ in range(2))
    np.testing.assert_array_equal(first.args[0], second.args[0])


def test_a_listing_numbers_accesses_and_names_refs_as_the_learner_did(tmp_path) -> None:
    """Each load and store is numbered in program order; a ref made by `jax.new_ref` keeps its variable's name."""
    module = learner(tmp_path, "import jax\nimport jax.numpy as jnp\n\n\ndef total(x):\n"
                     "    acc = jax.new_ref(jnp.zeros(()))\n    acc[...] += x.sum()\n    return jax.freeze(acc)\n")
    closed = jax.make_jaxpr(module.total)(jnp.ones(3))
    rows = listing(closed, {closed.jaxpr.invars[0]: "x"}, tmp_path / "mine.py")["rows"]
    numbered = [(r["n"], r["kind"], r.get("ref"), r["line"]) for r in rows if r["n"]]
    assert numbered == [(1, "new ref", "acc", 6), (2, "load", "acc", 7), (3, "store", "acc", 7),
                        (4, "freeze", "acc", 8)]


@pytest.mark.parametrize(("field", "value", "problem"), [
    ("show", "donations", "show"),
    ("calls", ["f(x"], "calls"),
    ("calls", ["a = 1; b = 2"], "calls"),
])
def test_a_bad_inspect_table_names_the_field(tmp_path, field: str, value: object, problem: str) -> None:
    """exercise.toml's [inspect] is validated like the rest: one sentence naming the file and field."""
    from course import schema

    section: dict[str, object] = {"show": "compiles", "calls": ["f(x)"], field: value}
    with pytest.raises(RegistryError, match=f"field `inspect.sections.0.{problem}"):
        schema.validate(schema.ExerciseFile, {"title": "t", "topic": "t", "inspect": {"sections": [section]}},
                        "exercise.toml")


def test_every_section_has_an_observer_a_schema_name_and_a_drawing() -> None:
    """A section name is one of SECTIONS everywhere: the schema accepts it and the UI draws it."""
    import importlib
    import typing

    from course import schema
    from course.ui import inspection

    assert set(typing.get_args(schema.InspectSection.model_fields["show"].annotation)) == set(SECTIONS)
    assert set(inspection.DRAW) | {"compiles"} == set(SECTIONS) == set(inspection.TITLES)
    for name in SECTIONS:
        observer: Callable = importlib.import_module(f"course.grading.inspect.{name}").observe
        assert callable(observer)


SCANNED = """
import jax
import jax.numpy as jnp
from jax import lax


@jax.jit
def forward(w, x):
    return lax.scan(lambda h, wl: (jnp.tanh(h @ wl), None), x, w)[0]


@jax.jit
def unrolled(w, x):
    for i in range(w.shape[0]):
        x = jnp.tanh(x @ w[i])
    return x
"""


def test_the_compiler_section_reads_one_program_per_call(tmp_path, monkeypatch) -> None:
    """Memory, sizes, loops, matmuls with their runs, and saved residuals; equal matmuls of a Python loop group."""
    import io

    from rich.console import Console

    from course import ui
    from course.grading.inspect import compiler
    from course.ui.inspection import draw_section

    module = learner(tmp_path, SCANNED)
    texts = ["forward(w, x)", "unrolled(w, x)", "jax.grad(lambda v: forward(v, x).sum())(w)"]
    made = calls.make_calls(texts, "w = f32(4, 8, 8) / 4\nx = f32(2, 8)", module)
    scan, loop, grad = compiler.observe(made, module, tmp_path / "mine.py")
    assert [(lp["kind"], lp["length"], lp["carry"]) for lp in scan["loops"]] == [("scan", 4, ["float32[2, 8]"])]
    assert [(m["times"], m["count"], m["line"]) for m in scan["matmuls"]] == [(4, 1, 9)]
    assert scan["matmul_flops"] == 4 * 2 * 2 * 8 * 8 == sum(m["total_flops"] * m["count"] for m in loop["matmuls"])
    assert loop["loops"] == [] and [(m["times"], m["count"]) for m in loop["matmuls"]] == [(1, 4)]
    assert loop["jaxpr_equations"] > 2 * scan["jaxpr_equations"] and loop["hlo_instructions"] > scan["hlo_instructions"]
    assert scan["residuals"] == [] and {r["length"] for r in grad["residuals"]} == {4}
    assert grad["residual_bytes"] == sum(r["bytes"] * r["count"] * r["length"] for r in grad["residuals"])
    buffer = io.StringIO()
    monkeypatch.setattr(ui, "out", Console(file=buffer, width=200, color_system=None))
    draw_section({"show": "compiler", "note": "", "calls": [scan, loop, grad]})
    text = buffer.getvalue()
    assert "scan of 4 trips at line 9; carries float32[2, 8]" in text
    assert "float32[2, 8] @ float32[8, 8] -> float32[2, 8], 4 of them: 1 run each" in text
    assert "saved for the backward pass:" in text and "line 9: return lax.scan" in text


def test_a_kernel_drawing_names_each_dmas_semaphore_and_the_types_made_outside() -> None:
    """A DMA says which semaphore it signals; an operation outside the kernels shows the array it makes."""
    dma = {"from": "x_hbm_ref", "from_space": "ANY", "to": "bufs", "to_space": "VMEM", "sem": "sems", "line": 27,
           "waited": True, "wait_line": 29, "same_dtype": True, "read_before_wait": None}
    kernel = {"kernel": "k", "line": 39, "interpret": "interpret=True", "grid": [], "steps": 1, "aliases": [],
              "refs": [{"name": "sems", "role": "scratch", "space": "semaphore memory", "type": "semaphore[2]"}],
              "dmas": [dma], "listing": {"rows": []}, "hazards": [], "hbm_accesses": [], "source": {}}
    outside = {"depth": 1, "text": "c:f32[256,512] = dot_general[ preferred_element_type=float32 ] q b", "n": None,
               "kind": None, "line": 19}
    with ui.out.capture() as captured:
        kernels({"kernels": [kernel], "program": {"rows": [outside]}})
    text = " ".join(captured.get().split())
    assert "sems scratch semaphore memory semaphore[2]" in text
    assert "DMA at line 27 from x_hbm_ref (ANY) into bufs (VMEM) on sems, waited at line 29" in text
    assert "outside the kernels: dot_general f32[256,512] (line 19)" in text


def test_a_jitted_function_called_twice_lists_each_call_with_its_own_names() -> None:
    """JAX shares one inner jaxpr between two calls of a jit; the second call reads b_ref, not a stale a_ref."""

    @jax.jit
    def bump(r):
        r[...] = r[...] + 1.0

    def twice(a, b):
        bump(a)
        bump(b)

    closed = jax.make_jaxpr(twice)(jax.new_ref(jnp.zeros(3)), jax.new_ref(jnp.ones(3)))
    rows = listing(closed, dict(zip(closed.jaxpr.invars, ["a_ref", "b_ref"], strict=True)), None)["rows"]
    first, second = ([r for r in rows[i + 1:i + 4]] for i in (0, 4))
    assert [r.get("ref") for r in first if r.get("ref")] == ["a_ref", "a_ref"]
    assert [r.get("ref") for r in second if r.get("ref")] == ["b_ref", "b_ref"]
    assert {r["text"].split(":")[0] for r in first}.isdisjoint(r["text"].split(":")[0] for r in second)


EMIT_PIPELINE = '''
import jax
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu


def kernel(x_hbm, o_hbm):
    def body(x_ref, o_ref):
        o_ref[...] = 2 * x_ref[...]

    block = pl.BlockSpec((8, 128), lambda i: (i, 0))
    pltpu.emit_pipeline(body, grid=(x_hbm.shape[0] // 8,), in_specs=[block], out_specs=[block])(x_hbm, o_hbm)


@jax.jit
def stream_scale(x):
    return pl.pallas_call(kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                          in_specs=[pl.BlockSpec(memory_space=pl.ANY)], out_specs=pl.BlockSpec(memory_space=pl.ANY),
                          interpret=pltpu.InterpretParams())(x)
'''


def test_a_kernel_that_asks_for_a_tpu_while_traced_is_traced_on_one(tmp_path) -> None:
    """`emit_pipeline` asks which TPU it runs on; the kernels section traces it as the graders do, not as an error."""
    from course.grading.inspect import kernels as observe_kernels

    module = learner(tmp_path, EMIT_PIPELINE)
    (report,) = observe_kernels.observe(calls.make_calls(["stream_scale(f32(40, 128))"], "", module), module,
                                        tmp_path / "mine.py")
    assert "error" not in report, report["error"]
    (kernel,) = report["kernels"]
    spaces = {r["name"]: r["space"] for r in kernel["refs"]}
    assert (spaces["x_hbm"], spaces["o_hbm"]) == ("ANY", "ANY") and "VMEM" in spaces.values()  # the pipeline's slots


FLIPPED = '''
import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl


def flip_kernel(x_ref, o_ref):
    o_ref[...] = jnp.flip(x_ref[...], axis=1)


def flipped(x):
    return pl.pallas_call(flip_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype))(x)
'''


def test_a_kernel_is_shown_as_it_runs_here_and_with_what_a_tpu_refuses(tmp_path) -> None:
    """A file with no `interpret=`, traced under the strict interpreter a grading forces, shows that interpreter,
    and the lowering's refusal at the kernel's line; the drawing puts it under the kernel's name."""
    from jax.experimental.pallas import tpu as pltpu

    from course.grading.inspect import kernels as observe_kernels

    module = learner(tmp_path, FLIPPED)
    with pltpu.force_tpu_interpret_mode(pltpu.InterpretParams()):
        (report,) = observe_kernels.observe(calls.make_calls(["flipped(f32(8, 128))"], "", module), module,
                                            tmp_path / "mine.py")
    (kernel,) = report["kernels"]
    assert kernel["interpret"] == "strict TPU interpreter"
    assert kernel["tpu_refusal"] == "Unimplemented primitive in Pallas TPU lowering for tc: rev. (line 8)"
    with ui.out.capture() as captured:
        kernels(report)
    text = " ".join(captured.get().split())
    assert "(pallas_call at line 12, strict TPU interpreter;" in text
    assert "✗ a TPU cannot compile this kernel: Unimplemented primitive" in text
